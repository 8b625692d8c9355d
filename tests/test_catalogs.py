"""Every shipped catalog row loads through the same validated specs users' files go through, and the
rows the README leans on carry the vendors' and papers' own figures (written out here with their
source, not read back from the catalog)."""
import pytest

from costmodel.flops import embedding_parameters, total_parameters
from planner.inputs import catalogs, loading

REQUIRED_GPUS = ["a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb",
                 "b200-sxm-180gb", "gb200", "mi300x-192gb", "l40s-48gb",
                 "b300-sxm-270gb", "gb300", "mi325x-256gb", "mi355x-288gb"]
REQUIRED_CLUSTERS = ["dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72",
                     "dgx-b300", "gb300-nvl72", "amd-mi325x-platform", "amd-mi355x-platform"]
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
    # NVIDIA Blackwell Ultra datasheet (2025-10) p.5, HGX B300 column (sparse; dense = half): FP16/BF16 4.5
    # PFLOPS*, FP8/FP6 9*, TF32 2.2*, 270 GB HBM3E | 7.7 TB/s, up to 1,100 W; NVLink 5 1.8 TB/s. (tf32 from
    # the HGX B300 platform sheet, 18 PFLOPS* for 8 GPUs = 1125 dense each; the per-GPU column rounds.)
    "b300-sxm-270gb": (270, 4500 / 2, 9000 / 2, 18000 / 8 / 2, 7.7, 1800 / 2, 1100),
    # Same datasheet, GB300 column: FP16/BF16 5 PFLOPS*, FP8/FP6 10*, TF32 2.5*, 279 GB HBM3E | 8 TB/s,
    # up to 1,400 W; NVLink 5 1.8 TB/s.
    "gb300": (279, 5000 / 2, 10000 / 2, 2500 / 2, 8.0, 1800 / 2, 1400),
    # AMD Instinct MI325X specifications, as tabulated by stas00/ml-engineering @ 744d01e (which cites them):
    # "same compute as MI300X" (FP16/BF16 1307.4 = 2100 MHz x 1216 matrix cores x 512 FLOP, FP8 2614.9, TF32
    # 653.7 TFLOPS dense), 256 GB HBM3E, 6 TB/s, 1000 W; Infinity Fabric 7 links x 64 GB/s per direction.
    "mi325x-256gb": (256, 1307.4, 2614.9, 653.7, 6.0, 7 * 64, 1000),
    # AMD Instinct MI355X specifications (same source): FP16/BF16 2.5 PFLOPS, OCP-FP8 5 PFLOPS dense
    # (10.1* with sparsity), no TF32 figure, 288 GB HBM3E, 8 TB/s, 1400 W; Infinity Fabric 7 x 76.5 GB/s.
    "mi355x-288gb": (288, 2500, 5000, None, 8.0, 7 * 76.5, 1400),
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
    elif spec.vendor == "amd":  # no published TF32 matrix rate: "fp32" training uses the FP32 figure
        assert "tf32" not in gpu.dense_flops_per_second
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


# Block-scaled formats (dense TFLOP/s): mxfp8 at the 8-bit rate, nvfp4 at the 4-bit rate the sheets print
# ("FP8/FP6", "FP4"; * = with sparsity, dense half unless the sheet prints both).
BLOCK_SCALED = {
    # HGX B200: FP8 72 PFLOPS*, FP4 144 PFLOPS* for 8 GPUs; Blackwell's FP4 sparsity is 2x.
    "b200-sxm-180gb": (72000 / 8 / 2, 144000 / 8 / 2),
    # GB200 NVL72: FP8 720 PFLOPS*, FP4 1,440 PFLOPS* for 72 GPUs.
    "gb200": (720000 / 72 / 2, 1440000 / 72 / 2),
    # HGX B300: FP8 72 PFLOPS*, FP4 144 | 108 PFLOPS (sparse | dense) for 8 GPUs.
    "b300-sxm-270gb": (72000 / 8 / 2, 108000 / 8),
    # Blackwell Ultra datasheet, GB300 column: FP8/FP6 10 PFLOPS*, FP4 20 | 15 PFLOPS; NVIDIA "Inside
    # Blackwell Ultra" blog: "15 PetaFLOPS dense NVFP4".
    "gb300": (10000 / 2, 15000),
    # AMD lists MXFP8 for the MI350 series at its OCP-FP8 rate (MI350X 4.6 PF at 2200 MHz; MI355X is the
    # same silicon at 2400 MHz: 5.0 PF). NVFP4 is NVIDIA's format: none.
    "mi355x-288gb": (4600 * 2400 / 2200, None),
    # AMD's MI350X page as summarised (catalogs/gpus.yaml mi350x-288gb): "Peak MXFP8: 4.6 PFLOPs"; no NVFP4.
    "mi350x-288gb": (4600, None),
}


@pytest.mark.parametrize("name", sorted(BLOCK_SCALED))
def test_block_scaled_peaks(name):
    mxfp8, nvfp4 = BLOCK_SCALED[name]
    gpu = catalogs.gpu_catalog()[name].to_gpu()
    assert gpu.dense_flops_per_second["mxfp8"] == pytest.approx(mxfp8 * TERA, rel=ROUNDING)
    if nvfp4 is None:
        assert "nvfp4" not in gpu.dense_flops_per_second
    else:
        assert gpu.dense_flops_per_second["nvfp4"] == pytest.approx(nvfp4 * TERA, rel=ROUNDING)
        assert gpu.dense_flops_per_second["fp4"] == gpu.dense_flops_per_second["nvfp4"]


def test_block_scaled_formats_only_where_the_hardware_has_them():
    """mxfp8/nvfp4 keys mean hardware block scaling: Blackwell parts, and mxfp8 on MI355X (CDNA4)."""
    for name, spec in catalogs.gpu_catalog().items():
        keys = set(spec.dense_tflops) & {"mxfp8", "nvfp4"}
        assert keys == ({"mxfp8", "nvfp4"} if name in BLOCK_SCALED and spec.vendor == "nvidia"
                        else {"mxfp8"} if name in BLOCK_SCALED else set()), name


# Special-function exponentials (exp2, the SFU's MUFU.EX2 that softmax runs on): SMs x results per clock per
# SM x clock. Per-SM rate: CUDA C++ Programming Guide, throughput of native arithmetic instructions, 16 per
# clock for exp2f up to compute capability 10.0; NVIDIA "Making Softmax More Efficient with NVIDIA
# Blackwell Ultra" (2026-02-25): Blackwell Ultra doubles SFU throughput -> 32. Clock: the one each part's
# dense bf16 peak is rated at (H100: 132 SMs x 4096 FLOP/clock x 1.830 GHz = 989 TFLOP/s; Blackwell: 148 SMs
# x 8192 FLOP/clock, so 2250 TFLOP/s -> 1.856 GHz and 2500 -> 2.062 GHz, GB200's reported max SM clock).
B200_GHZ = 2250e12 / (148 * 8192) / 1e9
EXP = {
    "h100-sxm-80gb": 132 * 16 * 1.830e9,
    "h200-sxm-141gb": 132 * 16 * 1.830e9,
    "b200-sxm-180gb": 148 * 16 * B200_GHZ * 1e9,
    "gb200": 148 * 16 * 2.062e9,
    "b300-sxm-270gb": 148 * 32 * B200_GHZ * 1e9,
    "gb300": 148 * 32 * 2.062e9,
}


@pytest.mark.parametrize("name", sorted(EXP))
def test_exp_throughput(name):
    gpu = catalogs.gpu_catalog()[name].to_gpu()
    assert gpu.exp_per_second == pytest.approx(EXP[name], rel=0.002)


def test_blackwell_ultra_doubles_the_exponential_rate_and_matches_nvidias_measurement():
    """Same bf16 peak, twice the exponentials (B300 vs B200, GB300 vs GB200). NVIDIA's MUFU.EX2
    microbenchmark (softmax blog above): 4,943 Gop/s on GB200, 10,024 on GB300; the rated-clock figures sit
    at most 3% below those measurements."""
    c = {n: g.to_gpu() for n, g in catalogs.gpu_catalog().items()}
    for ultra, base in (("b300-sxm-270gb", "b200-sxm-180gb"), ("gb300", "gb200")):
        assert c[ultra].dense_flops_per_second["bf16"] == c[base].dense_flops_per_second["bf16"]
        assert c[ultra].exp_per_second == pytest.approx(2 * c[base].exp_per_second, rel=1e-3)
    for name, measured in (("gb200", 4943e9), ("gb300", 10024e9)):
        assert 0.97 <= c[name].exp_per_second / measured <= 1.0, name


# Measured maximum achievable matmul (MAMF), stas00/ml-engineering compute/accelerator/README.md @
# 744d01e: BF16 table (H100 SXM 794.5, B200 1745.0, GB200 1822.0, B300 SXM 1769.0, MI325X 784.9,
# MI355X 1565.0, MI300X 668.4, A100 SXM 271.2, A100 PCIe 252.9) and FP8 table (H100 SXM 1402.6, H200 SXM
# 1453.4, B200 3432.5, GB200 3615.6, B300 SXM 3353.3). None for GB300, H200 bf16, MI3xx fp8.
MAMF = {
    "a100-sxm-80gb": (271.2, None), "a100-pcie-80gb": (252.9, None),
    "h100-sxm-80gb": (794.5, 1402.6), "h200-sxm-141gb": (None, 1453.4),
    "b200-sxm-180gb": (1745.0, 3432.5), "gb200": (1822.0, 3615.6), "b300-sxm-270gb": (1769.0, 3353.3),
    "mi300x-192gb": (668.4, None), "mi325x-256gb": (784.9, None), "mi355x-288gb": (1565.0, None),
}


def test_measured_matmul_is_each_parts_own():
    """Every measurement in the catalog is the part's own published one; a part without one carries none
    (never a sibling's) and says in its notes how the cost model does without: its generation's value, or
    a derivation from a measured part (DERIVED below)."""
    for name, spec in catalogs.gpu_catalog().items():
        bf16, fp8 = MAMF.get(name, (None, None))
        assert (spec.measured_matmul_bf16_tflops, spec.measured_matmul_fp8_tflops) == (bf16, fp8), name
        derived = (spec.derived_matmul_bf16_tflops, spec.derived_matmul_fp8_tflops)
        assert derived == DERIVED.get(name, (None, None)), name
        missing = [p for p, m, d in (("bf16", bf16, derived[0]), ("fp8", fp8, derived[1]))
                   if p in spec.dense_tflops and m is None and d is None]
        if missing:
            assert "MAMF" in spec.notes and "generation" in spec.notes, (name, missing)


# GB300 has no MAMF. Azure AI-benchmarking-guide (catalogs/gpus.yaml [azure-gemm]) ran one cuBLASLt FP8 GEMM
# benchmark (random inputs, 10,000 warm-ups) on both NVL72 parts: 16384^3 at 3308.5 TFLOP/s on GB300 and
# 2819.5 on GB200. GB300's rate = GB200's MAMF (above) x 3308.5 / 2819.5, in both formats.
GB300_OVER_GB200 = 3308.5 / 2819.5  # 1.1734
DERIVED = {"gb300": (round(1822.0 * GB300_OVER_GB200, 1), round(3615.6 * GB300_OVER_GB200, 1))}  # 2138.0, 4242.7


def test_gb300_gemm_rate_is_derived_from_gb200():
    """By hand: 1822.0 x 1.17344 = 2138.0 and 3615.6 x 1.17344 = 4242.7 TFLOP/s, fractions 0.855 of 2500 and
    0.849 of 5000; the cost model reads them as it reads a measurement, so GB300's large GEMMs run 1.173x
    GB200's in both formats."""
    assert DERIVED["gb300"] == (2138.0, 4242.7)
    c = catalogs.gpu_catalog()
    gb300, gb200 = c["gb300"].to_gpu(), c["gb200"].to_gpu()
    assert gb300.matmul_fraction == pytest.approx({"bf16": 2138.0 / 2500, "fp8": 4242.7 / 5000})
    for fmt in ("bf16", "fp8"):
        assert gb300.matmul_fraction[fmt] / gb200.matmul_fraction[fmt] == pytest.approx(GB300_OVER_GB200, rel=1e-4)


def test_derived_matmul_beside_a_measurement_is_refused():
    b200 = catalogs.gpu_catalog()["b200-sxm-180gb"]
    with pytest.raises(ValueError, match="derived_matmul_fp8_tflops beside measured_matmul_fp8_tflops"):
        type(b200)(**b200.model_dump(exclude_none=True), derived_matmul_fp8_tflops=3000.0)


# GPUs allowed to share every figure below (one part under two names); none today.
SAME_PART: set[frozenset[str]] = set()


def test_no_two_gpus_share_all_figures():
    """Catches a row copied from another part: no two catalog GPUs have identical peaks, HBM bandwidth,
    memory, board power and exponential rate unless listed above as the same part."""
    seen: dict[tuple, str] = {}
    for name, spec in catalogs.gpu_catalog().items():
        key = (tuple(sorted(spec.dense_tflops.items())), spec.hbm_bandwidth_gbytes_per_s, spec.memory_gib,
               spec.tdp_watts, spec.exp_tops)
        if key in seen:
            assert frozenset({name, seen[key]}) in SAME_PART, (name, seen[key])
        seen[key] = name


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
    # DGX B300: "8x OSFP ports serving 8x single-port NVIDIA ConnectX-8 VPI"; MLPerf Training v5.1 Nebius
    # B300 node: "8x ConnectX-8 IB XDR 800Gb/s".
    "dgx-b300": ("b300-sxm-270gb", 8, 8, 800),
    # MLPerf Training v5.1 NVIDIA Theia (GB300 NVL72): 18 nodes x 4 GPUs, "4x ConnectX-8 IB XDR 800 Gb/s".
    "gb300-nvl72": ("gb300", 4, 72, 800),
    # AMD ROCm MI355X cluster recipe: 8 MI355X per node, 8x Pollara 400 (400 Gb/s) NICs mapped 1:1.
    "amd-mi355x-platform": ("mi355x-288gb", 8, 8, 400),
    # MI325X: 8 per node, fully connected Infinity Fabric (MLPerf v5.1 AMD node); NIC rate not on a sheet
    # read here (the row assumes 400 Gb/s), so not checked.
    "amd-mi325x-platform": ("mi325x-256gb", 8, 8, None),
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
    "mixtral-8x7b": (46.7, 1, "weights", "Mistral AI blog: 46.7B total"),
    "mixtral-8x22b": (141, 0, "weights", "Mistral AI blog: 141B total"),
    "qwen3-30b-a3b": (30.5, 1, "weights", "HF Qwen/Qwen3-30B-A3B card: 30.5B"),
    "qwen3-235b-a22b": (235, 0, "weights", "HF Qwen/Qwen3-235B-A22B card: 235B"),
    "deepseek-v3": (671, 0, "weights", "DeepSeek-V3 report: 671B main model"),
    "gpt-oss-120b": (116.8, 1, "weights", "gpt-oss model card Table 1: 116.83B"),
    "llama4-maverick": (400, -1, "weights", "Llama 4 model card: 400B incl. 0.87B vision tower; LM 400.7B"),
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
