"""Every shipped catalog row loads through the same validated specs users' files go through."""
import pytest

from planner.inputs import catalogs, loading

REQUIRED_GPUS = ["a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb",
                 "b200-sxm-180gb", "gb200", "mi300x-192gb", "l40s-48gb"]
REQUIRED_CLUSTERS = ["dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72"]
REQUIRED_MODELS = ["gpt3-175b", "megatron-1.7b", "megatron-1t", "bloom-176b", "llama2-7b", "llama2-13b",
                   "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b"]


def test_required_gpus_with_sources():
    gpus = catalogs.gpu_catalog()
    for name in REQUIRED_GPUS:
        assert name in gpus and gpus[name].source


def test_every_cluster_resolves_and_prices_are_dated():
    for name, spec in catalogs.cluster_catalog().items():
        cluster = loading.build_cluster(spec, spec.gpus_per_node)
        assert cluster.gpu.memory_bytes > 0 and spec.source, name
        if spec.usd_per_gpu_hour is not None:
            assert spec.price_date and spec.price_source and spec.price_kind, name
    assert set(REQUIRED_CLUSTERS) <= set(catalogs.cluster_catalog())


@pytest.mark.parametrize("name", sorted(catalogs.model_catalog()))
def test_every_model_loads(name):
    spec = loading.load_model_spec(name)
    assert spec.source


def test_required_models_present():
    assert set(REQUIRED_MODELS) <= set(catalogs.model_catalog())


def test_gpt3_shape_from_brown_et_al():
    # Brown et al. 2020 Table 2.1: 96 layers, d_model 12288, 96 heads, context 2048.
    m = loading.load_model_spec("gpt3-175b")
    assert (m.num_layers, m.hidden_size, m.num_attention_heads, m.seq_length) == (96, 12288, 96, 2048)
