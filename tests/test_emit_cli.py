"""`planner emit`: files written, safe writing, one-line errors with exit code 2."""
import json
import os
import subprocess

import pytest
from emit_support import ROOT, estimate, tiny

from planner.commands.main import main
from planner.emit import emit_files

MODEL_YAML = """name: tiny
num_layers: 24
hidden_size: 1024
num_attention_heads: 16
vocab_size: 32000
seq_length: 2048
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "tiny.yaml").write_text(MODEL_YAML)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(estimate(tiny(), tp=2, dp=4, zero_stage=1, global_batch_size=32)))
    return tmp_path


def emit(capsys, inputs, *extra, fmt="all"):
    return run(capsys, "emit", inputs / "plan.json", "--model", inputs / "tiny.yaml", "--format", fmt,
               "--out", inputs / "out", *extra)


def one_line_error(code, err, *needles):
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err


def test_all_writes_both_frameworks_and_readme(capsys, inputs):
    code, out, err = emit(capsys, inputs)
    assert code == 0, err
    names = sorted(str(p.relative_to(inputs / "out")) for p in (inputs / "out").rglob("*") if p.is_file())
    assert names == ["README.txt", "deepspeed/ds_config.json", "deepspeed/hostfile", "deepspeed/launch.sh",
                     "megatron/launch.sh"]
    assert len(out.splitlines()) == 5
    for script in ("deepspeed/launch.sh", "megatron/launch.sh"):
        path = inputs / "out" / script
        assert os.access(path, os.X_OK)
        subprocess.run(["bash", "-n", str(path)], check=True)
    readme = (inputs / "out" / "README.txt").read_text()
    assert "tp 2, cp 1 (p2p), pp 1, vpp 1, dp 4, ep 1, etp 1; ZeRO stage 1" in readme and "bash megatron/launch.sh" in readme


def test_single_format_writes_only_its_files(capsys, inputs):
    assert emit(capsys, inputs, fmt="megatron")[0] == 0
    assert not (inputs / "out" / "deepspeed").exists()
    assert "deepspeed" not in (inputs / "out" / "README.txt").read_text().lower()


def test_never_overwrites_without_force(capsys, inputs):
    assert emit(capsys, inputs)[0] == 0
    (inputs / "out" / "deepspeed" / "ds_config.json").write_text("mine")
    code, _, err = emit(capsys, inputs)
    one_line_error(code, err, "refusing to overwrite", "ds_config.json", "--force")
    assert (inputs / "out" / "deepspeed" / "ds_config.json").read_text() == "mine"
    assert emit(capsys, inputs, "--force")[0] == 0
    assert json.loads((inputs / "out" / "deepspeed" / "ds_config.json").read_text())["train_batch_size"] == 32
    assert not [p for p in (inputs / "out").rglob(".*tmp")]


def test_refused_plan_writes_nothing(capsys, inputs):
    (inputs / "plan.json").write_text(json.dumps(estimate(tiny(), dp=2, pp=2, vpp=2, global_batch_size=4)))
    code, _, err = emit(capsys, inputs)
    one_line_error(code, err, "DeepSpeed would reject", "no interleaved schedule", "--format megatron writes only")
    assert not (inputs / "out").exists()


def test_plan_both_frameworks_refuse(capsys, inputs):
    (inputs / "plan.json").write_text(json.dumps(estimate(tiny(), dp=2, pp=2, zero_stage=2)))
    code, _, err = emit(capsys, inputs)
    one_line_error(code, err, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism", "Megatron-LM would reject")
    assert "writes only" not in err


def test_catalog_model_by_name(capsys, tmp_path):
    from planner.inputs.loading import load_model_spec
    (tmp_path / "plan.json").write_text(json.dumps(estimate(load_model_spec("llama3-8b"), tp=2, dp=4)))
    code, _, err = run(capsys, "emit", tmp_path / "plan.json", "--format", "megatron", "--out", tmp_path / "o")
    assert code == 0, err
    # the catalog's Llama 3 8B (Llama 3 paper Table 3: 32 layers, 4096 wide, 14336 FFN, 32 heads, 8 KV heads)
    script = (tmp_path / "o" / "megatron" / "launch.sh").read_text()
    for flag in ("--num-layers 32", "--hidden-size 4096", "--ffn-hidden-size 14336", "--num-attention-heads 32",
                 "--num-query-groups 8", "--tensor-model-parallel-size 2", "--seq-length 8192"):
        assert f"  {flag}\n" in script, flag


@pytest.mark.parametrize("content,needle", [
    ("[1, 2]", "list of 2 estimates"), ("{", "not valid JSON"), ('{"model": "tiny"}', "expected one estimate"),
    ('{"model": "nope", "plan": {"dp": 1}}', "not in the catalog and the file has no model_spec; pass --model")])
def test_bad_plan_file(capsys, tmp_path, content, needle):
    (tmp_path / "p.json").write_text(content)
    code, _, err = run(capsys, "emit", tmp_path / "p.json", "--format", "all", "--out", tmp_path / "o")
    one_line_error(code, err, needle)


def test_model_and_sequence_mismatch(capsys, inputs):
    other = inputs / "other.yaml"
    other.write_text(MODEL_YAML.replace("name: tiny", "name: other"))
    code, _, err = run(capsys, "emit", inputs / "plan.json", "--model", other, "--format", "all", "--out", inputs / "o")
    one_line_error(code, err, "scored for model 'tiny'")
    est = json.loads((inputs / "plan.json").read_text())
    est.update(step_time_s=2.0, tokens_per_s=32 * 4096 / 2.0)  # scored with --seq-length 4096
    (inputs / "plan.json").write_text(json.dumps(est))
    one_line_error(*emit(capsys, inputs)[::2], "scored with seq_length 4096", "--seq-length 4096")
    assert emit(capsys, inputs, "--seq-length", "4096")[0] == 0


def test_gpus_per_node_must_fill_nodes(capsys, inputs):
    one_line_error(*emit(capsys, inputs, "--gpus-per-node", "3")[::2], "do not fill whole nodes of 3")


def test_emit_files_api(tmp_path):
    paths = emit_files(tiny(), estimate(tiny(), dp=8, zero_stage=1), "deepspeed", tmp_path, force=False)
    assert sorted(p.name for p in paths) == ["README.txt", "ds_config.json", "hostfile", "launch.sh"]


def test_estimate_json_round_trip(capsys, tmp_path):
    """The real `planner estimate --json` output is accepted as PLAN.json."""
    code, out, err = run(capsys, "estimate", "llama3-8b", "dgx-h100", "--gpus", "16", "--tp", "2", "--gbs", "64",
                         "--zero", "1", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(out)
    code, _, err = run(capsys, "emit", tmp_path / "plan.json", "--format", "all", "--out", tmp_path / "o")
    assert code == 0, err
    cfg = json.loads((tmp_path / "o" / "deepspeed" / "ds_config.json").read_text())
    assert (cfg["train_batch_size"], cfg["gradient_accumulation_steps"]) == (64, 8)


def test_offload_is_refused_for_megatron_only(capsys, inputs):
    one_line_error(*emit(capsys, inputs, "--offload-optimizer", "cpu", fmt="megatron")[::2], "DeepSpeed settings")
    assert emit(capsys, inputs, "--offload-optimizer", "cpu", fmt="all")[0] == 0
    cfg = json.loads((inputs / "out" / "deepspeed" / "ds_config.json").read_text())
    assert cfg["zero_optimization"]["offload_optimizer"] == {"device": "cpu", "pin_memory": True}
    assert "offload is on" in (inputs / "out" / "README.txt").read_text()


def test_tp_overlap_before_hopper_uses_te_ipc_fallback(tmp_path, capsys):
    """Transformer Engine's userbuffers need CUDA multicast (compute capability 9.0+); on an A100 the
    launch script sets UB_SKIPMC=1 (TE examples/pytorch/comm_gemm_overlap/README.md @ v2.8), on an
    H100 it does not."""
    from planner.commands.main import main

    for cluster, expected in (("dgx-a100", True), ("dgx-h100", False)):
        assert main(["estimate", "gpt3-175b", cluster, "--gpus", "64", "--tp", "8", "--pp", "8", "--gbs", "64",
                     "--sequence-parallel", "--tp-comm-overlap", "--json"]) == 0
        plan = tmp_path / f"{cluster}.json"
        plan.write_text(capsys.readouterr().out)
        assert main(["emit", str(plan), "--format", "megatron", "--out", str(tmp_path / cluster)]) == 0
        capsys.readouterr()
        script = (tmp_path / cluster / "megatron" / "launch.sh").read_text()
        assert ("export UB_SKIPMC=1" in script) is expected, cluster
        assert "--tp-comm-overlap" in script


def test_an_estimate_from_before_the_launch_details_takes_them_from_the_catalog(tmp_path, capsys):
    """A schema-6 file's model_spec has no norm_epsilon (nor nope_every, router_probs_on_input): for a catalog
    model of the same shape emit takes them from the catalog (DeepSeek-V3's RMSNorm epsilon 1e-6), for any
    other model it refuses rather than launch without them."""
    import json

    from planner.commands.main import main as run

    assert run(["estimate", "deepseek-v3", "dgx-h100", "--gpus", "64", "--pp", "8", "--ep", "8", "--mbs", "1",
                "--gbs", "512", "--zero", "1", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    old = {**est, "schema_version": "6",
           "model_spec": {k: v for k, v in est["model_spec"].items() if k not in ("norm_epsilon", "nope_every")}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert run(["emit", str(tmp_path / "old.json"), "--format", "megatron", "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    assert "--norm-epsilon 1e-06" in (tmp_path / "o" / "megatron" / "launch.sh").read_text()
    other = {**old, "model": "my-deepseek", "model_spec": {**old["model_spec"], "name": "my-deepseek"}}
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert run(["emit", str(tmp_path / "other.json"), "--format", "megatron", "--out", str(tmp_path / "p")]) == 2
    assert "predates schema 7" in capsys.readouterr().err and not (tmp_path / "p").exists()


def test_an_estimate_from_before_rope_scaling_takes_it_from_the_catalog(tmp_path, capsys):
    """A schema-20 file's model_spec states no rope_scaling: DeepSeek-V3's is taken from the catalog (YaRN by
    40, so --rotary-scaling-factor 40.0, not the MLA command line's 1), and a model the catalog does not
    hold is refused, naming schema 21, rather than launched with its RoPE unscaled."""
    import json

    from planner.commands.main import main as run

    assert run(["estimate", "deepseek-v3", "dgx-h100", "--gpus", "64", "--pp", "8", "--ep", "8", "--mbs", "1",
                "--gbs", "512", "--zero", "1", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    spec = {k: v for k, v in est["model_spec"].items() if k != "rope_scaling"}
    old = {**est, "schema_version": "20", "model_spec": spec}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert run(["emit", str(tmp_path / "old.json"), "--format", "megatron", "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    assert "--rotary-scaling-factor 40.0" in (tmp_path / "o" / "megatron" / "launch.sh").read_text()
    other = {**old, "model": "my-deepseek", "model_spec": {**spec, "name": "my-deepseek"}}
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert run(["emit", str(tmp_path / "other.json"), "--format", "megatron", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "predates schema 21" in err and "RoPE scaling" in err and not (tmp_path / "p").exists()


def test_shared_experts_gate_is_launched_and_older_files_state_it_or_are_refused(tmp_path, capsys):
    """Qwen1.5-MoE's shared expert sits behind a sigmoid gate (Transformers v4.57.1 Qwen2MoeSparseMoeBlock
    shared_expert_gate, a Linear(h, 1)): its launch writes --moe-shared-expert-gate, where Megatron-LM's
    default builds the shared expert ungated, another model. A schema-22 file, which does not say, is refused
    for a model with shared experts the catalog does not hold; DeepSeek-V3's (ungated) is completed from the
    catalog; a dense model's needs nothing."""
    import json

    from planner.commands.main import main as run

    qwen = str(ROOT / "tests" / "data" / "hf_configs" / "qwen1.5-moe-a2.7b.json")
    assert run(["estimate", qwen, "dgx-h100", "--gpus", "8", "--ep", "4", "--seq-length", "4096", "--gbs", "64",
                "--zero", "1", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["model_spec"]["moe"]["shared_expert_gate"] is True
    (tmp_path / "q.json").write_text(json.dumps(est))
    assert run(["emit", str(tmp_path / "q.json"), "--model", qwen, "--seq-length", "4096", "--format", "megatron",
                "--out", str(tmp_path / "q")]) == 0
    capsys.readouterr()
    assert "--moe-shared-expert-gate" in (tmp_path / "q" / "megatron" / "launch.sh").read_text()
    moe = {k: v for k, v in est["model_spec"]["moe"].items() if k != "shared_expert_gate"}
    old = {**est, "schema_version": "22", "model_spec": {**est["model_spec"], "moe": moe}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert run(["emit", str(tmp_path / "old.json"), "--format", "megatron", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "predates schema 23" in err and "shared experts are gated" in err and not (tmp_path / "p").exists()
    for model, argv in (("deepseek-v3", ["--pp", "8", "--ep", "8", "--gbs", "512"]), ("llama3-8b", ["--gbs", "64"])):
        assert run(["estimate", model, "dgx-h100", "--gpus", "64", "--mbs", "1", "--zero", "1", *argv, "--json"]) == 0
        est = json.loads(capsys.readouterr().out)
        spec = est["model_spec"]
        if "moe" in spec:
            spec = {**spec, "moe": {k: v for k, v in spec["moe"].items() if k != "shared_expert_gate"}}
        (tmp_path / f"{model}.json").write_text(json.dumps({**est, "schema_version": "22", "model_spec": spec}))
        assert run(["emit", str(tmp_path / f"{model}.json"), "--format", "megatron",
                    "--out", str(tmp_path / model)]) == 0, model
        capsys.readouterr()
        assert "--moe-shared-expert-gate" not in (tmp_path / model / "megatron" / "launch.sh").read_text()


def test_a_whole_iteration_graph_from_estimate_to_megatron_only(capsys, tmp_path):
    """`estimate --full-iteration-graph` scores the plan without the per-layer host overhead and records it
    in plan.full_iteration_graph; Megatron-LM's launch writes --cuda-graph-impl full_iteration, DeepSpeed
    (no whole-iteration graph) is refused in one line."""
    argv = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "32", "--zero", "1", "--json"]
    code, out, _ = run(capsys, *argv)
    plain = json.loads(out)
    code, out, _ = run(capsys, *argv, "--full-iteration-graph")
    graphed = json.loads(out)
    assert code == 0 and graphed["plan"]["full_iteration_graph"] is True
    assert plain["plan"]["full_iteration_graph"] is False
    assert graphed["step_time_s"] < plain["step_time_s"]
    (tmp_path / "plan.json").write_text(json.dumps(graphed))
    code, _, err = run(capsys, "emit", tmp_path / "plan.json", "--format", "megatron", "--out", tmp_path / "m")
    assert code == 0, err
    launch = (tmp_path / "m" / "megatron" / "launch.sh").read_text()
    assert "--cuda-graph-impl full_iteration" in launch and "--no-check-for-nan-in-loss-and-grad" in launch
    code, _, err = run(capsys, "emit", tmp_path / "plan.json", "--format", "deepspeed", "--out", tmp_path / "d")
    one_line_error(code, err, "whole-iteration CUDA graph")


def test_per_layer_graphs_are_scored_by_estimate_and_refused_by_every_emitter(capsys, tmp_path):
    """`estimate --layer-cuda-graphs` records plan.layer_cuda_graphs and drops the per-layer launch overhead
    (Llama 3 8B, 32 layers, 4 micro-batches of dp 8: the step 4 x 32 x layer_overhead_seconds shorter); no
    emitter writes the graphs (their memory pools are not priced), each refusing in one line (Megatron-LM's
    naming its flag for them)."""
    from costmodel.types import Efficiency

    argv = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "32", "--zero", "1", "--json"]
    code, out, _ = run(capsys, *argv)
    plain = json.loads(out)
    code, out, _ = run(capsys, *argv, "--layer-cuda-graphs")
    graphed = json.loads(out)
    assert code == 0 and graphed["plan"]["layer_cuda_graphs"] is True and plain["plan"]["layer_cuda_graphs"] is False
    saved = 4 * 32 * Efficiency().layer_overhead_seconds
    assert plain["step_time_s"] - graphed["step_time_s"] == pytest.approx(saved, rel=1e-6)
    (tmp_path / "plan.json").write_text(json.dumps(graphed))
    for fmt, words in (("megatron", "--cuda-graph-impl local"), ("deepspeed", "per-layer CUDA graphs"),
                       ("torchtitan", "per-layer CUDA graphs")):
        code, _, err = run(capsys, "emit", tmp_path / "plan.json", "--format", fmt, "--out", tmp_path / fmt)
        one_line_error(code, err, words)
        assert not (tmp_path / fmt).exists() or not any((tmp_path / fmt).rglob("*.sh")), fmt


@pytest.mark.parametrize("gpu, words", [("h100-sxm-80gb", "fused attention: cudnn"),
                                        ("mi300x-192gb", "fused attention: yes, the ROCm stack's own kernel")])
def test_readme_names_the_attention_kernel_of_the_gpus_stack(gpu, words):
    """cuDNN is NVIDIA's: the README of a plan for an AMD GPU (catalog vendor amd) does not name it, whatever
    the plan's attention_kernel field holds (its default is cudnn)."""
    from planner.emit import build_job
    from planner.emit.readme import note_lines, plan_lines

    model = tiny()
    job = build_job(model, {**estimate(model, dp=8), "gpu": gpu})
    assert job.plan.attention_kernel == "cudnn"
    assert words in " ".join(plan_lines(job))
    rocm = "run them with the frameworks' ROCm builds, whose support for this plan's other settings"
    assert (rocm in " ".join(note_lines(job, ["megatron"]))) == gpu.startswith("mi")


def test_command_choices_are_the_framework_modules():
    """The commands spell their --format/--emit/--framework choices out (importing planner.frameworks for --help
    would cost the CLI's start-up); they must name exactly the framework modules and emit's formats, with "all"
    the frameworks that build any architecture (no model_gap: not torchtitan)."""
    import argparse

    from planner import frameworks
    from planner.commands import emit as emit_cmd
    from planner.commands import suggest as suggest_cmd
    from planner.emit import ALL, FORMATS

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    emit_cmd.register(sub)
    suggest_cmd.register(sub)
    choices = {a.dest: a.choices for p in sub.choices.values() for a in p._actions if a.choices}
    assert tuple(choices["format"]) == FORMATS and tuple(choices["emit"]) == FORMATS
    assert set(FORMATS) == {*frameworks.NAMES, "all"} and ALL == ("deepspeed", "megatron")
    assert suggest_cmd.FRAMEWORK_CHOICES == ("any", *frameworks.NAMES)
