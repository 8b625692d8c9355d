"""Launch files that would not run as planned, found by an audit of `planner emit` against the framework
sources (2026-12-01): each is now written as planned or refused by the framework's rule, named."""
import pytest

from planner.commands.main import main


def emitted(capsys, tmp_path, estimate_argv, fmt):
    """(exit code, stderr, written folder) of estimate --json then emit --format `fmt`."""
    assert main(["estimate", *estimate_argv, "--json"]) == 0
    (tmp_path / "p.json").write_text(capsys.readouterr().out)
    code = main(["emit", str(tmp_path / "p.json"), "--format", fmt, "--out", str(tmp_path / "o")])
    return code, capsys.readouterr().err, tmp_path / "o"


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
def test_block_scaled_plans_train_bf16_parameters(capsys, tmp_path, precision):
    """MXFP8 / NVFP4 GEMMs keep bf16 parameters (Megatron-LM arguments.py sets params_dtype from --bf16;
    without it the model is fp32 and --overlap-moe-expert-parallel-comm is refused)."""
    code, _, out = emitted(capsys, tmp_path, ["llama3-8b", "gb200-nvl72", "--gpus", "8", "--tp", "2",
                                              "--sequence-parallel", "--precision", precision, "--zero", "1"], "megatron")
    assert code == 0
    launch = (out / "megatron" / "launch.sh").read_text()
    assert "--bf16" in launch and "--grad-reduce-in-bf16" in launch


@pytest.mark.parametrize("argv, needle", [
    (["mixtral-8x7b", "dgx-h100", "--gpus", "16", "--tp", "2", "--ep", "8", "--sequence-parallel", "--zero", "1",
      "--seq-length", "4096", "--moe-cuda-graphs", "--recompute", "full"], "MoE CUDA graphs do not run with full"),
    (["qwen3-30b-a3b", "dgx-h100", "--gpus", "8", "--ep", "8", "--zero", "1", "--moe-cuda-graphs",
      "--offload-layers", "4"], "CUDA graphs do not run with CPU activation offloading"),
    (["llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "2", "--sequence-parallel", "--precision", "fp8",
      "--recompute", "selective", "--recompute-modules", "core_attn,layernorm"], "delayed scaling does not recompute"),
    (["qwen3-30b-a3b", "dgx-h100", "--gpus", "8", "--ep", "1", "--zero", "1", "--ep-dispatch", "deepep"],
     "DeepEP dispatcher needs expert TP x EP > 1"),
    (["gpt-oss-120b", "dgx-h100", "--gpus", "32", "--tp", "2", "--cp", "2", "--cp-comm", "all_gather", "--ep", "8",
      "--sequence-parallel", "--zero", "1"], "attention sinks (--softmax-type learnable) under context parallelism"),
])
def test_megatron_refuses_what_its_config_checks_refuse(capsys, tmp_path, argv, needle):
    code, err, out = emitted(capsys, tmp_path, argv, "megatron")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_hierarchical_cp_splits_kv_heads_like_ulysses(capsys):
    """a2a+p2p runs Ulysses over the 8 CP ranks of a DGX H100 node: Qwen3-30B-A3B's 4 KV heads do not split 8 ways."""
    code = main(["estimate", "qwen3-30b-a3b", "dgx-h100", "--gpus", "16", "--cp", "8", "--cp-comm", "a2a+p2p",
                 "--ep", "8", "--zero", "1", "--seq-length", "32768", "--gbs", "16"])
    err = capsys.readouterr().err
    assert code == 2 and "4 KV heads per TP rank must be divisible by 8" in err


def test_torchtitan_writes_async_tp(capsys, tmp_path):
    """torchtitan 0.3.0: AsyncTP is CompileConfig.enable_async_tensor_parallel (config/configs.py)."""
    plan = ["llama3-8b", "dgx-h100", "--gpus", "16", "--tp", "2", "--zero", "3", "--sequence-parallel",
            "--tp-comm-overlap", "--attention-kernel", "flash2", "--sp-gathered"]  # DTensor's SP saves gathered inputs
    code, _, out = emitted(capsys, tmp_path, plan, "torchtitan")
    assert code == 0
    assert "enable_async_tensor_parallel=True" in (out / "torchtitan" / "planner_job.py").read_text()
