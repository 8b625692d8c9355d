"""Every shipped catalog row loads through the same validated specs users' files go through, and the
rows the README leans on carry the vendors' and papers' own figures (written out here with their
source, not read back from the catalog)."""
import pytest

from costmodel.flops import embedding_parameters, total_parameters
from planner.inputs import catalogs, loading

REQUIRED_GPUS = ["a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb",
                 "b200-sxm-180gb", "gb200", "mi300x-192gb", "l40s-48gb"]
REQUIRED_CLUSTERS = ["dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72"]
REQUIRED_MODELS = ["gpt3-175b", "megatron-1.7b", "megatron-1t", "bloom-176b", "llama2-7b", "llama2-13b",
                   "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b"]

GIB, TERA, GIGA = 2**30, 1e12, 1e9

# Vendor datasheets. NVIDIA prints tensor throughput "with sparsity" (marked *): the dense figure is half.
# Columns: marketed memory (GB, held as GiB: see catalogs/gpus.yaml "Units"), dense bf16, fp8 (None = no
# fp8 tensor cores) and tf32 TFLOP/s, HBM TB/s, NVLink GB/s per direction (half the bidirectional figure),
# board power W (None: not on the datasheet used).
DATASHEETS = {
    # NVIDIA A100 Tensor Core GPU datasheet: BF16 312, TF32 156 (dense), 40GB HBM2 1,555 GB/s,
    # NVLink 600 GB/s, 400 W (SXM).
    "a100-sxm-40gb": (40, 312, None, 156, 1.555, 300, 400),
    # Same datasheet, 80GB HBM2e SXM: 2,039 GB/s.
    "a100-sxm-80gb": (80, 312, None, 156, 2.039, 300, 400),
    # NVIDIA H100 Tensor Core GPU datasheet, SXM: BF16 1,979*, FP8 3,958*, TF32 989*, 80GB 3.35 TB/s,
    # NVLink 900 GB/s, up to 700 W.
    "h100-sxm-80gb": (80, 1979 / 2, 3958 / 2, 989 / 2, 3.35, 450, 700),
    # Same datasheet, PCIe: BF16 1,513*, FP8 3,026*, TF32 756*, 80GB 2 TB/s, 300-350 W; no NVLink switch.
    "h100-pcie-80gb": (80, 1513 / 2, 3026 / 2, 756 / 2, 2.0, 0, 350),
    # NVIDIA H200 datasheet, SXM: BF16 1,979*, FP8 3,958*, 141GB HBM3e 4.8 TB/s, NVLink 900 GB/s, up to 700 W.
    "h200-sxm-141gb": (141, 1979 / 2, 3958 / 2, 989 / 2, 4.8, 450, 700),
    # NVIDIA DGX B200 datasheet, per GPU of 8: 1,440 GB and 64 TB/s HBM3e, FP8 training 72 PFLOPS* (4.5 PF
    # dense each), NVLink 14.4 TB/s (1.8 TB/s each); HGX B200: FP16/BF16 36 PFLOPS* for 8 (2.25 PF dense each).
    "b200-sxm-180gb": (1440 / 8, 36000 / 8 / 2, 72000 / 8 / 2, None, 64 / 8, 1800 / 2, None),
    # NVIDIA GB200 NVL72 spec, per GPU of 72: 13.4 TB and 576 TB/s HBM3e, FP8 720 PFLOPS*, BF16 360 PFLOPS*,
    # NVLink 130 TB/s.
    "gb200": (13400 / 72, 360000 / 72 / 2, 720000 / 72 / 2, None, 576 / 72, 130000 / 72 / 2, None),
    # AMD Instinct MI300X data sheet (dense): FP16/BF16 1307.4, FP8 2614.9, TF32 653.7 TFLOPS, 192 GB HBM3,
    # 5.3 TB/s, 750 W.
    "mi300x-192gb": (192, 1307.4, 2614.9, 653.7, 5.3, None, 750),
    # NVIDIA L40S datasheet, dense column: BF16 362.05, FP8 733, TF32 183; 48GB GDDR6 864 GB/s, 350 W,
    # no NVLink.
    "l40s-48gb": (48, 362.05, 733, 183, 0.864, 0, 350),
}
# The catalog keeps three significant figures of a datasheet peak (MI300X 1307.4 -> 1300, H100 989.5 -> 989):
# one tolerance for every row.
ROUNDING = 0.006


@pytest.mark.parametrize("name", REQUIRED_GPUS)
def test_required_gpus_carry_their_datasheet_figures(name):
    spec = catalogs.gpu_catalog()[name]
    assert spec.source  # and the figures it cites:
    gpu = spec.to_gpu()  # what the cost model computes with
    memory_gb, bf16, fp8, tf32, hbm_tb, nvlink_gb, watts = DATASHEETS[name]
    assert gpu.memory_bytes == pytest.approx(memory_gb * GIB, rel=ROUNDING)
    assert gpu.peak_flops_per_second("bf16") == pytest.approx(bf16 * TERA, rel=ROUNDING)
    assert gpu.peak_flops_per_second("fp16") == pytest.approx(bf16 * TERA, rel=ROUNDING)  # same units
    if fp8 is None:  # no fp8 tensor cores: the cost model falls back to bf16
        assert "fp8" not in gpu.dense_flops_per_second
    else:
        assert gpu.peak_flops_per_second("fp8") == pytest.approx(fp8 * TERA, rel=ROUNDING)
    if tf32 is not None:
        assert gpu.dense_flops_per_second["tf32"] == pytest.approx(tf32 * TERA, rel=ROUNDING)
    assert gpu.hbm_bandwidth_bytes_per_second == pytest.approx(hbm_tb * TERA, rel=ROUNDING)
    if nvlink_gb is not None:
        assert gpu.nvlink_bandwidth_bytes_per_second == pytest.approx(nvlink_gb * GIGA, rel=ROUNDING)
    if watts is not None:
        assert gpu.tdp_watts == watts


def test_every_gpu_peak_rises_with_narrower_types():
    """Tensor cores double their rate per halving of the operand width: tf32 x 2 = bf16 = fp16 = fp8 / 2,
    to 2% (L40S: 183 x 2 = 366 against 362.05) in every vendor table above; a swapped or mistyped column
    (off by 2x or more) breaks this for any catalog row."""
    for name, spec in catalogs.gpu_catalog().items():
        t = spec.to_gpu().dense_flops_per_second
        assert t["bf16"] == t["fp16"], name
        if "tf32" in t:
            assert t["tf32"] == pytest.approx(t["bf16"] / 2, rel=0.02), name
        if "fp8" in t:
            assert t["fp8"] == pytest.approx(2 * t["bf16"], rel=0.02), name


# System datasheets: (GPU, GPUs per node, NVLink domain, network Gb/s per GPU).
SYSTEMS = {
    "dgx-a100": ("a100-sxm-80gb", 8, 8, 200),  # DGX A100 datasheet: 8x ConnectX-6 HDR 200 Gb/s (compute)
    "dgx-h100": ("h100-sxm-80gb", 8, 8, 400),  # DGX H100 datasheet: 8x ConnectX-7 400 Gb/s (OSFP)
    "dgx-b200": ("b200-sxm-180gb", 8, 8, 400),  # DGX B200 datasheet: 8x ConnectX-7 400 Gb/s
    # GB200 NVL72: 18 compute trays of 2 superchips (4 GPUs), one 72-GPU NVLink domain.
    "gb200-nvl72": ("gb200", 4, 72, None),
    "aws-p4d-24xlarge": ("a100-sxm-40gb", 8, 8, 400 / 8),  # AWS P4d: 8x A100 40GB, 400 Gbps EFA per instance
    "aws-p5-48xlarge": ("h100-sxm-80gb", 8, 8, 3200 / 8),  # AWS P5: 8x H100, 3200 Gbps EFA per instance
    "azure-nd-h100-v5": ("h100-sxm-80gb", 8, 8, 400),  # Azure ND H100 v5: 8x 400 Gb/s NDR InfiniBand
}


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_clusters_match_their_system_datasheets(name):
    gpu, per_node, domain, gbits = SYSTEMS[name]
    spec = catalogs.cluster_catalog()[name]
    cluster = loading.build_cluster(spec, 2 * per_node)
    assert (cluster.gpu.name, cluster.gpus_per_node, cluster.nvlink_domain_size) == (gpu, per_node, domain)
    if gbits is not None:
        assert cluster.network_bandwidth_bytes_per_second == pytest.approx(gbits * 1e9 / 8)  # bits -> bytes


def test_every_cluster_resolves_and_prices_are_dated():
    for name, spec in catalogs.cluster_catalog().items():
        cluster = loading.build_cluster(spec, spec.gpus_per_node)
        gpu = catalogs.gpu_catalog()[spec.gpu] if isinstance(spec.gpu, str) else spec.gpu
        assert cluster.gpu.memory_bytes == gpu.memory_gib * GIB and spec.source, name
        if spec.usd_per_gpu_hour is not None:
            assert spec.price_date and spec.price_source and spec.price_kind, name
            assert 0.1 < spec.usd_per_gpu_hour < 100, name  # dollars per GPU-hour, not per node or per second
    assert set(REQUIRED_CLUSTERS) <= set(catalogs.cluster_catalog())


def narayanan_count(spec) -> float:
    """Parameters as Narayanan et al. 2021 count them (Table 1 eq.): also linear and norm biases (11h per
    layer beyond our 2h of norm weights: 9h linear, 2h norm; the final norm's h bias) and s x h learned
    positions; we count weights only. test_flops checks this correction on the formula itself."""
    m = spec.to_model()
    return total_parameters(m) + 11 * m.num_layers * m.hidden_size + m.seq_length * m.hidden_size - m.hidden_size


# name: (published parameters in billions, decimals printed, count convention, source)
PUBLISHED_B = {
    "gpt3-175b": (175, 0, "narayanan", "Brown et al. 2020 Table 2.1"),
    "megatron-1.7b": (1.7, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-3.6b": (3.6, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-7.5b": (7.5, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-18.4b": (18.4, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-39.1b": (39.1, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-76.1b": (76.1, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-145.6b": (145.6, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-310.1b": (310.1, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-529.6b": (529.6, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "megatron-1t": (1008.0, 1, "narayanan", "Narayanan et al. 2021 Table 1"),
    "korthikanti-22b": (22, 0, "narayanan", "Korthikanti et al. 2022 Table 3"),
    "bloom-176b": (176, 0, "weights", "BigScience 2022 (arXiv:2211.05100): 176B"),
    "llama2-7b": (6.738415616, 9, "weights", "HF meta-llama/Llama-2-7b-hf: 6,738,415,616"),
    "llama2-13b": (13.015864320, 9, "weights", "HF meta-llama/Llama-2-13b-hf: 13,015,864,320"),
    "llama2-70b": (68.976648192, 9, "weights", "HF meta-llama/Llama-2-70b-hf: 68,976,648,192"),
    "llama3-8b": (8.030261248, 9, "weights", "HF meta-llama/Meta-Llama-3-8B: 8,030,261,248"),
    "llama3-70b": (70.553706496, 9, "weights", "HF meta-llama/Meta-Llama-3-70B: 70,553,706,496"),
    "llama3-405b": (405.853388800, 9, "weights", "HF meta-llama/Llama-3.1-405B: 405,853,388,800"),
    "nemotron-4-15b": (15.6, 1, "weights", "Parmar et al. 2024 (arXiv:2402.16819): 15.6B"),
    "nemotron-4-340b": (341.0, 1, "weights", "Nemotron-4 340B report: 9.4B embedding + 331.6B non-embedding"),
    "mpt-7b": (6.65, 2, "weights", "Hugging Face Hub mosaicml/mpt-7b, safetensors metadata: 6.65B params "
                                   "(the model card rounds to 6.7B); output layer tied to the embedding"),
}
@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_catalog_models_have_their_published_parameter_counts(name):
    published, decimals, convention, _source = PUBLISHED_B[name]
    spec = loading.load_model_spec(name)
    ours = narayanan_count(spec) if convention == "narayanan" else total_parameters(spec.to_model())
    # equal to the published figure at the precision it is printed with
    assert abs(ours / 1e9 - published) <= 0.5 * 10**-decimals + 1e-12, (ours, published)


def test_model_catalog_is_covered_by_published_counts():
    """Every catalog model has a published count above (a new row must come with its source)."""
    assert set(catalogs.model_catalog()) == set(PUBLISHED_B)


def test_bloom_matches_the_hub_count_exactly():
    """HF bigscience/bloom: 176,247,271,424 parameters. It also counts what we leave out: 9h linear
    biases (QKV 3h, dense h, fc1 4h, fc2 h) and 2h norm biases per layer, the embedding LayerNorm (2h),
    the final norm's bias (h), and Megatron's padding of the 250,680-token vocabulary to 250,880."""
    spec = loading.load_model_spec("bloom-176b")
    m, h = spec.to_model(), spec.hidden_size
    extra = 70 * 11 * h + 2 * h + h + (250_880 - 250_680) * h
    assert total_parameters(m) + extra == 176_247_271_424


def test_nemotron_340b_embedding_split():
    """Nemotron-4 340B technical report (arXiv:2406.11704) Sec 2: 9.4 billion embedding parameters and
    331.6 billion non-embedding parameters (untied input and output embeddings, 256k vocabulary)."""
    m = loading.load_model_spec("nemotron-4-340b").to_model()
    embedding = 2 * embedding_parameters(m)
    assert round(embedding / 1e9, 1) == 9.4
    assert round((total_parameters(m) - embedding) / 1e9, 1) == 331.6


@pytest.mark.parametrize("name", sorted(catalogs.model_catalog()))
def test_every_model_loads(name):
    spec = loading.load_model_spec(name)
    assert spec.source
    # shapes a transformer can have: whole heads, KV groups dividing the heads
    assert spec.hidden_size % spec.num_attention_heads == 0, name
    assert spec.num_attention_heads % (spec.num_kv_heads or spec.num_attention_heads) == 0, name


def test_required_models_present():
    assert set(REQUIRED_MODELS) <= set(catalogs.model_catalog())


def test_gpt3_shape_from_brown_et_al():
    # Brown et al. 2020 Table 2.1: 96 layers, d_model 12288, 96 heads, context 2048.
    m = loading.load_model_spec("gpt3-175b")
    assert (m.num_layers, m.hidden_size, m.num_attention_heads, m.seq_length) == (96, 12288, 96, 2048)
