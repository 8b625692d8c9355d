import pytest

from costmodel import types as cm

GIB = 2**30


def a100_80gb() -> cm.Gpu:
    """A100 SXM 80GB: 312 TFLOP/s dense bf16/fp16, 2.0 TB/s HBM2e, NVLink 3 300 GB/s per direction
    (NVIDIA A100 datasheet, as transcribed in shared/validation gpu_specs)."""
    return cm.Gpu("a100-sxm-80gb", 80 * GIB, {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
                  2.0e12, 300e9, "ampere")


def selene(num_gpus: int) -> cm.Cluster:
    """DGX A100 SuperPOD (Selene): 8 GPUs per NVSwitch node, 8 x 200 Gb/s HDR per node."""
    return cm.Cluster("selene", a100_80gb(), num_gpus, 8, 8, 300e9, 200e9 / 8, True, 2.0)


def gpt(layers: int, hidden: int, heads: int, vocab: int = 51200, seq: int = 2048) -> cm.Model:
    """Megatron GPT shape: MHA, 4h GeLU MLP, dropout, tied embeddings."""
    return cm.Model(f"gpt-{layers}x{hidden}", layers, hidden, heads, vocab, seq, mlp="gelu",
                    tie_embeddings=True, dropout=True)


@pytest.fixture
def a100():
    return a100_80gb()


def one_line_error(capsys, argv, *needles):
    """`planner ARGV` exits 2 with one 'planner: error:' line on stderr holding every needle."""
    from planner.commands.main import main

    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, argv
    assert len(err) == 1 and err[0].startswith("planner: error:"), err
    for needle in needles:
        assert needle in err[0], (needle, err[0])
