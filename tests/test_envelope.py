"""The MFU envelope of published runs (computed by planner/validation/envelope.py, read by
planner/analysis/envelope.py) and the caution `suggest` gives when its best plan is above it (issue 14:
believable where the search looks)."""
from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

from costmodel import types as cm
from planner.analysis import accuracy, envelope
from planner.commands.main import main
from planner.validation import envelope as computed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_suggest import CASES  # noqa: E402
from test_accuracy import MOE_KINDS, kind_by_hand  # noqa: E402


def test_shipped_envelope_is_what_the_rows_give():
    """validation/mfu_envelope.yaml is generated (python -m planner.validation.envelope --write)."""
    assert envelope.shipped() == {(e.gpu, e.precision, e.kind): e for e in computed.compute()}


def test_each_envelope_holds_only_runs_of_its_kind():
    """Every envelope's row trains a model of the envelope's kind, and each kind's envelope is the highest
    measured MFU among the rows of that kind alone (read from the rows here): a dense run does not set a
    mixture-of-experts envelope, nor the reverse, nor a coarse-grained MoE a fine-grained one's. Where two kinds
    ran a GPU in a precision, they differ."""
    from planner.validation.runs import default_holdout, load_runs, prepare

    best: dict[tuple, float] = {}
    for run in load_runs() + load_runs(default_holdout()):
        if not run.exclude:
            p = prepare(run)
            key = (p.cluster.gpu.name, p.plan.precision, kind_by_hand(p.model))
            best[key] = max(best.get(key, 0.0), computed.measured_mfu(p))
    assert set(envelope.shipped()) == set(best)
    for key, e in envelope.shipped().items():
        assert e.mfu == pytest.approx(best[key], abs=1e-4), key
    for one, other, where in (("dense", "moe-fine", ("gb200", "mxfp8")), ("moe-coarse", "moe-fine", ("gb200", "bf16"))):
        both = {k[:2] for k in best if k[2] == one} & {k[:2] for k in best if k[2] == other}
        assert where in both and ("h100-sxm-80gb", "fp8") in both
        assert all(best[(*k, one)] != best[(*k, other)] for k in both)


@pytest.mark.parametrize("name, kind", [("llama3-8b", "dense"), ("mixtral-8x7b", "moe-coarse"),
                                        ("mixtral-8x22b", "moe-coarse"), ("gpt-oss-120b", "moe-fine"),
                                        ("llama4-maverick", "moe-fine"), ("qwen3-30b-a3b", "moe-fine"),
                                        ("qwen3-235b-a22b", "moe-fine"), ("deepseek-v3", "moe-fine")])
def test_kind_of_catalog_models(name, kind):
    """Granularity 4h over the expert width (Krajewski et al. 2024), fine-grained from 2, from the models' config.json:
    Mixtral 8x7B 4 x 4096 / 14336 = 1.14, coarse; Llama 4 Maverick 4 x 5120 / 8192 = 2.5, fine; the rest as
    test_accuracy.MOE_KINDS gives them."""
    from planner.inputs.loading import load_model_spec

    spec = load_model_spec(name)
    assert accuracy.kind_of(spec) == kind == accuracy.kind_of(spec.to_model())


def test_kind_of_every_row_model():
    """Every scored row's model (Grok-1 and GPT-OSS 20B as MLPerf runs it among them, which the catalog lacks) is of
    the kind test_accuracy.MOE_KINDS gives it by hand, and every MoE model it names trains some row."""
    from planner.validation.runs import default_holdout, load_runs, prepare

    models = [prepare(run).model for run in load_runs() + load_runs(default_holdout()) if not run.exclude]
    for model in models:
        assert accuracy.kind_of(model) == kind_by_hand(model), model.name
    assert {m.name for m in models if m.moe} == set(MOE_KINDS)


def test_h100_bf16_moe_envelope_by_hand():
    """Grok-1 314B on 512 H100 (NVIDIA's DGX Cloud Benchmarking recipes, held out) as NeMo runs it: L 64, h 6144, 48
    heads of 128 over 8 KV groups, 8 experts of width 32768 (SwiGLU, 3 matrices), top 2, V 128256, s 8192, GBS 1024,
    printed 15.933 s a step. Per token, 6 x the active parameters (attention 2h^2 + 2 h 8 x 128, two experts 2 x 3 h f,
    the router h x 8, the output layer h V) plus the causal attention 6 L s h: 521.75 GFLOP, so
    1024 x 8192 x that over 15.933 s x 512 x 989 TFLOP/s is 54.2%: the highest of the mixture-of-experts rows on H100 in
    bf16 of its kind, coarse-grained (Mixtral 8x22B's 47.0% was the envelope before it), above the dense envelope
    there (Nemotron-4 15B's 53.8%, below)."""
    e = envelope.shipped()[("h100-sxm-80gb", "bf16", "moe-coarse")]
    layers, h, f, v, s = 64, 6144, 32768, 128256, 8192
    per_token = 6 * (layers * (2 * h * h + 2 * h * 8 * 128 + 2 * 3 * h * f + h * 8) + h * v) + 6 * layers * s * h
    assert (e.run, e.file) == ("dgxc-25.05-grok1-314b-h100-512gpu-bf16", "holdout.yaml")
    assert e.mfu == pytest.approx(1024 * s * per_token / (15.933 * 512 * 989e12), abs=2e-4)
    assert envelope.shipped()[("h100-sxm-80gb", "bf16", "dense")].run == "dgxc-25.05-nemotron4-15b-h100-16gpu-bf16"


def test_h100_bf16_fine_grained_moe_envelope_by_hand():
    """The fine-grained MoE rows on H100 in bf16 are held to their own best, far below Grok-1's 54.2%: Llama 4
    Maverick on 512 H100 (NVIDIA's DGX Cloud recipe, held out), GBS 1024 of 8192 tokens in 4.426 s. Its model FLOPs a
    token, by hand from its config (48 layers of hidden 5120, 40 query and 8 KV heads of 128; 24 dense MLPs of 16384,
    24 MoE layers of one routed and one shared expert of 8192 and a router of 128; vocabulary 202048): per layer
    attention 2 x 5120^2 + 2 x 5120 x 1024 = 62,914,560 weights, dense MLP 3 x 5120 x 16384 = 251,658,240, MoE 2 x 3 x
    5120 x 8192 + 5120 x 128 = 252,313,600, output layer 5120 x 202048 = 1,034,485,760: 16,149,708,800 weights, x 6;
    causal attention 6 x 8192 x 5120 a layer, x 48 = 12,079,595,520; 108,977,848,320 a token, 8.93e14 a sequence
    (the README prints 8.92e14). MFU = 1024 x 8192 x that / (4.426 s x 512 x 989e12) = 40.8%, over the 39.3% of the
    Qwen3-235B-A22B long-context run that set it before (Megatron-MoE-ModelZoo, 389 / 989 TFLOP/s)."""
    e = envelope.shipped()[("h100-sxm-80gb", "bf16", "moe-fine")]
    assert (e.run, e.file) == ("dgxc-25.05-llama4-maverick-h100-512gpu-bf16", "holdout.yaml")
    per_token = 6 * (48 * 62_914_560 + 24 * 251_658_240 + 24 * 252_313_600 + 1_034_485_760) + 48 * 6 * 8192 * 5120
    assert per_token == 108_977_848_320
    assert e.mfu == pytest.approx(1024 * 8192 * per_token / (4.426 * 512 * 989e12), abs=2e-4)
    assert e.mfu > 389 / 989


def test_a100_bf16_envelope_by_hand():
    """MPT-7B on 8 A100 80GB (LLM Foundry v0.10.0 table): 4641 tokens/s/GPU at global batch 96 x 2048,
    so a step is 96 x 2048 / (4641 x 8) = 5.295 s. Model FLOPs (Korthikanti eq. 7, L 32, h 4096, s 2048,
    V 50432) with the attention term s/6h halved for the causal mask: 72 B L s h^2 (1 + s/12h + V/12hL)
    = 8.159e15 per step; over 5.295 s x 8 x 312 TFLOP/s that is 0.6174 (the full square, s/6h, gives
    0.6414; the table prints 0.6423 with the embedding counted in N)."""
    e = envelope.shipped()[("a100-sxm-80gb", "bf16", "dense")]
    b, layers, s, h, v = 96, 32, 2048, 4096, 50432
    flops = 72 * b * layers * s * h**2 * (1 + s / (12 * h) + v / (12 * h * layers))
    assert e.run == "mosaic-mpt-7b-a100-80gb-8gpu-s2048"
    assert e.mfu == pytest.approx(flops / (96 * 2048 / (4641 * 8) * 8 * 312e12), abs=2e-4)


def test_h100_bf16_envelope_is_a_held_out_row_by_hand():
    """The envelope counts held-out rows too (published runs that no fit reads): Nemotron-4 15B on 16 H100 in
    NVIDIA's DGX Cloud Benchmarking recipes (v25.05.04: L 32, h 6144, 48 heads over 8 KV groups, squared-ReLU
    MLP of 24576, V 256000, s 4096, GBS 64) printed 2.746 s a step. Per token, the README's count with the
    attention square halved for the causal mask: 12 L h^2 (1 + 8/48) + 6 L h s + 12 L h f + 6 h V = 89.17 GFLOP,
    so 64 x 4096 x that over 2.746 s x 16 x 989 TFLOP/s is 53.8%, above Megatron-Core's H100 weak-scaling 16B
    row (47.1%, the envelope before these rows) and every H100 bf16 row of runs.yaml (MPT-7B, 44.6%)."""
    e = envelope.shipped()[("h100-sxm-80gb", "bf16", "dense")]
    layers, h, s, f, v = 32, 6144, 4096, 24576, 256000
    per_token = 12 * layers * h**2 * (1 + 8 / 48) + 6 * layers * h * s + 12 * layers * h * f + 6 * h * v
    assert (e.run, e.file) == ("dgxc-25.05-nemotron4-15b-h100-16gpu-bf16", "holdout.yaml")
    assert e.mfu == pytest.approx(64 * s * per_token / (2.746 * 16 * 989e12), abs=2e-4)


def suggest_json(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["suggest", *argv, "--top", "1", "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("name, argv", CASES, ids=[c[0] for c in CASES])
def test_every_benchmark_case_is_held_against_its_envelope(name, argv, capsys):
    """Each bench_suggest case: the envelope it is held against (printed), and `above` exactly when the
    best plan's MFU (causal attention, as the envelope counts it) exceeds it."""
    from planner.inputs.loading import load_model_spec

    out = suggest_json(argv)
    best, env = out["plans"][0], out["envelope"]
    kind = kind_by_hand(load_model_spec(argv[0]))
    assert env["kind"] == kind
    published = envelope.shipped().get((best["gpu"], best["plan"]["precision"], kind))
    with capsys.disabled():
        print(f"\n{name}: best MFU {100 * best['mfu_causal']:.1f}% (causal); envelope "
              + (f"{100 * env['published_mfu']:.1f}% ({env['run']}: {env['source']})" if published else
                 "none published"))
    if published is None:
        assert env["published_mfu"] is None and env["above"] is True
    else:
        assert env["published_mfu"] == published.mfu and env["run"] == published.run
        assert env["above"] == (best["mfu_causal"] > published.mfu)


# The caution names which MFU it holds (the causal one) against the tables' (the full attention square).
ABOVE = ("counting attention's causal half (MFU elsewhere counts the full s x s square) is above every published dense "
         "run on")


def test_text_output_cautions_above_the_envelope(capsys):
    """GPT-3 175B on 1024 A100: the best plan's MFU is above every published A100 bf16 run."""
    assert main(["suggest", "gpt3-175b", "dgx-a100", "--gpus", "1024", "--top", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"{ABOVE} a100-sxm-80gb in bf16 (highest 61.7%" in text


def test_estimate_holds_the_plan_against_its_envelope(capsys):
    """`estimate` carries the same judgement for the plan it is given: GPT-3 175B at tp 8, pp 4, mbs 1 on
    1024 A100s is below 61.7% (envelope in --json, no caution); the search's best layout is above it."""
    base = ["estimate", "gpt3-175b", "dgx-a100", "--gpus", "1024", "--gbs", "1536", "--tp", "8", "--pp", "4",
            "--zero", "1", "--sequence-parallel"]
    assert main([*base, "--mbs", "1", "--json"]) == 0
    env = json.loads(capsys.readouterr().out)["envelope"]
    assert env["run"] == "mosaic-mpt-7b-a100-80gb-8gpu-s2048" and env["above"] is False
    assert main([*base, "--mbs", "4", "--vpp", "12", "--tp-comm-overlap", "--json"]) == 0
    mfu = json.loads(capsys.readouterr().out)["mfu_causal"]
    assert main([*base, "--mbs", "4", "--vpp", "12", "--tp-comm-overlap"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"the plan's MFU {100 * mfu:.1f}% {ABOVE} a100-sxm-80gb in bf16" in text


def test_a_gpu_no_run_was_published_on_is_said_to_be_unjudged(capsys):
    """No scored row ran an AMD MI355X in bf16 (its rows, MLPerf v6.0 Llama 3.1 8B runs, train in MXFP4):
    estimate's envelope has no published MFU, counts the plan as above it, and the text says the model was never
    judged there. A GPU with published runs in another precision only (H200: FP8 rows, none in bf16) is said so
    too."""
    assert [key for key in envelope.shipped() if key[0].startswith("mi")] == [("mi350x-288gb", "mxfp4", "dense"),
                                                                             ("mi355x-288gb", "mxfp4", "dense")]
    assert ("h200-sxm-141gb", "bf16", "dense") not in envelope.shipped()
    assert ("h200-sxm-141gb", "fp8", "dense") in envelope.shipped()
    for cluster, gpu in (("amd-mi355x-platform", "mi355x-288gb"), ("hgx-h200", "h200-sxm-141gb")):
        base = ["estimate", "llama3-8b", cluster, "--gpus", "8", "--gbs", "64", "--tp", "1", "--pp", "1", "--mbs", "1",
                "--zero", "1", "--precision", "bf16"]
        assert main([*base, "--json"]) == 0
        env = json.loads(capsys.readouterr().out)["envelope"]
        assert (env["gpu"], env["precision"], env["kind"], env["published_mfu"], env["run"], env["above"]) == (
            gpu, "bf16", "dense", None, None, True)
        assert main(base) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert f"has no published dense run to be held against: validation/ has none on {gpu} in bf16, so the " \
            "cost model was never judged on a dense model on this GPU in this precision" in text


def test_catalog_lists_the_precisions_published_runs_used_on_each_gpu(capsys):
    """`catalog gpus` names, per GPU, the precisions in which a scored row of runs.yaml or holdout.yaml ran
    on it (read from the rows here), and none for a GPU no row ran on (the AMD parts but MI350X and MI355X, in
    MXFP4 only)."""
    from planner.validation.runs import default_holdout, load_runs, prepare

    ran: dict[str, set] = {}
    for run in load_runs() + load_runs(default_holdout()):
        if not run.exclude:
            p = prepare(run)
            ran.setdefault(p.cluster.gpu.name, set()).add(p.plan.precision)
    assert main(["catalog", "gpus", "--json"]) == 0
    rows = {r["name"]: r["published_runs_in"] for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows == {name: sorted(ran.get(name, ())) for name in rows}
    assert rows["h100-sxm-80gb"] == ["bf16", "fp8"] and rows["mi355x-288gb"] == ["mxfp4"]
    assert rows["mi325x-256gb"] == []


def test_size_notes_a_choice_above_the_envelope():
    """`size` notes a chosen option whose plan's MFU is above every published run on its GPU and
    precision (H100 bf16: 53.8%, a held-out row), once even when it is both the cheapest and the fastest."""
    from types import SimpleNamespace

    from costmodel import types as cm
    from planner.inputs.catalogs import resolve_gpu
    from planner.sizing.run import envelope_notes

    def option(gpu: str, mfu: float, moe_sync: float = 0.0, moe=None, expert_width=0, **plan):
        offering = SimpleNamespace(name="c", gpu=resolve_gpu(gpu))
        est = SimpleNamespace(mfu_causal=mfu, step_time_seconds=10.0,
                              time_breakdown_seconds={"compute": 10.0 - moe_sync, "moe_sync": moe_sync})
        best = SimpleNamespace(plan=cm.Plan(**{"precision": "bf16", **plan}), est=est,
                               model=SimpleNamespace(moe=moe and SimpleNamespace(ffn_hidden_size=expert_width),
                                                     hidden_size=7168))
        return SimpleNamespace(offering=offering, num_gpus=1024, best=best)

    def cautioned(chosen: dict, seq_length: int = 4096) -> list[str]:
        """envelope_notes less the line every option gets on the model's accuracy (tests/test_accuracy.py)."""
        return [n for n in envelope_notes(chosen, seq_length) if "step_errors_by_gpu.yaml" not in n]

    above, below = option("h100-sxm-80gb", 0.56), option("h100-sxm-80gb", 0.40)
    notes = cautioned({"cheapest": above, "fastest": above})
    assert len(notes) == 1
    assert f"56.0% {ABOVE} h100-sxm-80gb in bf16 (highest 53.8%, dgxc-25.05-nemotron4-15b-h100-16gpu-bf16; " \
        "validation/holdout.yaml)" in notes[0]
    assert cautioned({"cheapest": below, "fastest": None}) == []
    accuracy = envelope_notes({"cheapest": below, "fastest": None}, 4096)
    assert len(accuracy) == 1 and accuracy[0].startswith("cheapest (c x 1024): on the ") \
        and " published dense runs on h100-sxm-80gb in bf16 the model" in accuracy[0]
    # no bf16 row on H200: no run to hold the plan against, which is said, whatever its MFU
    for mfu in (0.9, 0.1):
        notes = cautioned({"cheapest": option("h200-sxm-141gb", mfu)})
        assert len(notes) == 1 and "has no published dense run to be held against: validation/ has none on " \
            "h200-sxm-141gb in bf16" in notes[0]
    # a mixture-of-experts plan is held against the MoE rows of its granularity only: on H100 in FP8 the dense
    # envelope is GPT-3's 45.0% (MLPerf), the coarse-grained MoE one Grok-1's 32.2% (DGX Cloud recipes), so 35% is
    # above it; the fine-grained one Llama 4 Maverick's 23.4% (DGX Cloud recipes), so 25% is above that
    notes = cautioned({"cheapest": option("h100-sxm-80gb", 0.35, moe=True, expert_width=18432, precision="fp8")})
    assert len(notes) == 1 and "35.0% counting attention's causal half (MFU elsewhere counts the full s x s square) " \
        "is above every published coarse-grained mixture-of-experts run on h100-sxm-80gb in fp8 (highest 32.2%, " \
        "dgxc-25.05-grok1-314b-h100-512gpu-fp8; validation/holdout.yaml)" in notes[0]
    assert cautioned({"cheapest": option("h100-sxm-80gb", 0.25, moe=True, expert_width=18432, precision="fp8")}) == []
    notes = cautioned({"cheapest": option("h100-sxm-80gb", 0.25, moe=True, expert_width=2048, precision="fp8")})
    assert len(notes) == 1 and "is above every published fine-grained mixture-of-experts run on h100-sxm-80gb in " \
        "fp8 (highest 23.4%, dgxc-25.05-llama4-maverick-h100-512gpu-fp8; validation/holdout.yaml)" in notes[0]
    # and one note for a plan that uses a setting no published run on its generation used (TP overlap on A100)
    overlapped = option("a100-sxm-80gb", 0.40, tp=8, sequence_parallel=True, tp_comm_overlap=True)
    notes = cautioned({"cheapest": overlapped})
    assert len(notes) == 1 and "its plan uses settings no published run on ampere GPUs used" in notes[0] \
        and "tp_comm_overlap true" in notes[0]
    # and one for a plan whose MoE host wait is 40% of its step (planner/analysis/hostwait.py)
    notes = cautioned({"cheapest": option("h100-sxm-80gb", 0.40, moe_sync=4.0)})
    assert len(notes) == 1 and "its plan's MoE host waits are 40% of the step" in notes[0]
    # and one for sequences longer than any fitted run on the generation (planner/analysis/longcontext.py)
    notes = cautioned({"cheapest": below}, 131072)
    assert len(notes) == 1 and "its plan's sequences of 131,072 tokens are longer than any run" in notes[0]


def test_shipped_coverage_is_what_the_published_rows_give():
    """validation/coverage.yaml is generated (python -m planner.validation.coverage --write)."""
    from planner.analysis import coverage
    from planner.validation import coverage as computed_coverage

    assert coverage.shipped() == {gen: {name: tuple(values) for name, values in table.items()}
                                  for gen, table in computed_coverage.compute().items()}


def test_no_published_row_is_named_unvalidated():
    """A row's own plan uses only values that published runs on its generation used, by construction:
    the check that coverage and the rows agree, setting by setting."""
    from planner.analysis import coverage
    from planner.validation import runs as validation

    for run in validation.load_runs() + validation.load_runs(validation.default_holdout()):
        if not run.exclude:
            p = validation.prepare(run)
            assert coverage.unvalidated(p.generation, p.plan, p.model.moe is not None) == [], run.id


def test_tp_overlap_on_a100_is_named_unvalidated(capsys):
    """No A100 row of runs.yaml or holdout.yaml sets tp_comm_overlap (Megatron-LM 2021-2022 and LLM Foundry
    predate Transformer Engine's userbuffers), so GPT-3 175B on 1024 A100s, whose best plan overlaps its
    TP collectives, is told so in --json and in text; a plan without the overlap is not."""
    from planner.validation import runs as validation

    ampere = [r for r in validation.load_runs() + validation.load_runs(validation.default_holdout())
              if not r.exclude and validation.generation_of(r) == "ampere"]
    assert ampere and not any(r.plan.tp_comm_overlap for r in ampere)
    out = suggest_json(["gpt3-175b", "dgx-a100", "--gpus", "1024"])
    assert out["plans"][0]["plan"]["tp_comm_overlap"] is True
    assert {"setting": "tp_comm_overlap", "value": "true", "generation": "ampere",
            "published_values": ["false"]} in out["unvalidated_settings"]
    assert main(["suggest", "gpt3-175b", "dgx-a100", "--gpus", "1024", "--top", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "#1 uses settings no published run on ampere GPUs used" in text and "tp_comm_overlap true" in text
    assert "to search only what published runs used there: --fix tp_comm_overlap=false" in text
    # and the search it names keeps to what A100 runs used
    assert suggest_json(["gpt3-175b", "dgx-a100", "--gpus", "1024", "--fix", "tp_comm_overlap=false"]
                        )["unvalidated_settings"] == []
    base = ["estimate", "gpt3-175b", "dgx-a100", "--gpus", "1024", "--gbs", "1536", "--tp", "8", "--pp", "4",
            "--zero", "1", "--sequence-parallel", "--json"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["unvalidated_settings"] == []
    assert main([*base, "--tp-comm-overlap"]) == 0
    assert [u["setting"] for u in json.loads(capsys.readouterr().out)["unvalidated_settings"]] == ["tp_comm_overlap"]


def test_shipped_host_wait_errors_are_what_the_model_gives():
    """validation/host_wait_errors.yaml is generated from the rows and the shipped constants (python -m
    planner.validation.hostwait --write): a model change or refit that moves it must regenerate it."""
    from planner.analysis import hostwait
    from planner.validation import hostwait as computed_host_wait

    assert hostwait.shipped() == computed_host_wait.compute()


def test_host_wait_share_by_hand():
    """3 s of MoE host wait in a 10 s step is 30%, above the 20% threshold; 1 s is 10%, below; a dense
    step has none."""
    from planner.analysis import hostwait

    judged = hostwait.judge(10.0, {"compute": 6.0, "moe_sync": 3.0, "ep_comm": 1.0})
    assert judged["share"] == pytest.approx(0.3) and judged["threshold_share"] == 0.2
    assert judged["host_bound_rows"] == hostwait.shipped()["host_bound"]
    assert hostwait.judge(10.0, {"compute": 9.0, "moe_sync": 1.0}) is None
    assert hostwait.judge(10.0, {"compute": 10.0}) is None
    line = hostwait.caution(judged, "the plan's")
    bound = judged["host_bound_rows"]
    assert line.startswith("the plan's MoE host waits are 30% of the step")
    assert f"on the {bound['n']} published MoE runs where they are 20% or more" in line


def test_estimate_cautions_a_host_bound_moe_plan(capsys):
    """Qwen3-30B-A3B on 8 B200 at micro-batch 1 with the all-to-all dispatcher (the layout of the
    25.11 Megatron-Bridge row, which the model predicts 32% fast): most of the step is the MoE host
    wait, which --json carries and the text cautions; DeepEP with the MoE CUDA graphs has no wait."""
    base = ["estimate", "qwen3-30b-a3b", "dgx-b200", "--gpus", "8", "--gbs", "512", "--seq-length", "4096",
            "--tp", "1", "--pp", "1", "--ep", "8", "--zero", "1", "--mbs", "1", "--precision", "mxfp8"]
    assert main([*base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    wait = out["host_wait"]
    assert wait["share"] == pytest.approx(out["time_breakdown_s"]["moe_sync"] / out["step_time_s"])
    assert wait["share"] >= 0.2
    assert main(base) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"caution: the plan's MoE host waits are {100 * wait['share']:.0f}% of the step" in text
    assert main([*base, "--ep-dispatch", "deepep", "--moe-cuda-graphs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["time_breakdown_s"].get("moe_sync", 0.0) == 0.0 and out["host_wait"] is None


def test_shipped_long_context_errors_are_what_the_model_gives():
    """validation/long_context_errors.yaml is generated from the rows and the shipped constants (python -m
    planner.validation.longcontext --write): a model change, refit or new row that moves it must regenerate it."""
    from planner.analysis import longcontext
    from planner.validation import longcontext as computed

    assert longcontext.shipped() == computed.compute()


def test_long_context_judged_against_the_longest_fitted_run_by_hand():
    """Every Blackwell row of runs.yaml runs at most 8,192 tokens (Megatron-Bridge's Llama 3 8B rows; the MoE
    rows run 4,096), so 8,192 is inside the fitted range and 8,193 outside; the longer held-out Blackwell rows
    are the ModelZoo's Qwen3-235B-A22B on 128 GB200 at 131,072 tokens and NeMo's Mixtral 8x22B at 65,536 on 256
    B200 and 256 GB200. A generation with no row is judged by the MFU envelope instead (None here)."""
    from planner.analysis import longcontext
    from planner.validation import runs

    blackwell = [r for r in runs.load_runs() if not r.exclude and runs.generation_of(r) == "blackwell"]
    assert max(r.model.seq_length for r in blackwell) == 8192
    assert longcontext.judge("blackwell", 8192) is None
    judged = longcontext.judge("blackwell", 8193)
    assert judged["fitted_max_seq_length"] == 8192 and judged["seq_length"] == 8193
    rows = judged["beyond_rows"]
    # Qwen3-235B at 131,072 tokens and, since the forty-ninth session, NeMo's two Mixtral 8x22B rows at 65,536
    # (B200 and GB200): all three predicted slow, the Qwen3 row the most.
    assert rows["n"] == 3 and rows["worst_run"] == "modelzoo-qwen3-235b-a22b-gb200-mxfp8-131k-cp4"
    assert rows["mean_signed"] == pytest.approx(rows["mape"]) and rows["max_abs"] > 0.5
    line = longcontext.caution(judged, "the plan's")
    assert line.startswith("the plan's sequences of 8,193 tokens are longer than any run the cost model was fitted on")
    assert f"the 3 published runs that long there are predicted {100 * rows['mape']:.1f}% off on average" in line
    assert line.endswith("slow on balance (validation/holdout.yaml)")
    assert longcontext.judge("trainium", 10**6) is None


def test_long_context_caution_without_judged_rows_says_so():
    from planner.analysis import longcontext

    judged = {"seq_length": 32768, "generation": "ampere", "fitted_max_seq_length": 8192,
              "beyond_rows": {"n": 0, "mape": None, "max_abs": None, "mean_signed": None, "worst_run": None}}
    assert longcontext.caution(judged, "#1's").endswith("no published run that long was judged there")


def test_estimate_cautions_a_blackwell_plan_at_131k_tokens(capsys):
    """The layout of the ModelZoo's GB200 row at 131,072 tokens carries `long_context` in --json and the
    caution in text; the same layout at 4,096 tokens (inside the fitted range) carries null."""
    base = ["estimate", "qwen3-235b-a22b", "gb200-nvl72", "--gpus", "128", "--gbs", "1024", "--tp", "4", "--cp", "4",
            "--pp", "4", "--vpp", "12", "--ep", "32", "--mbs", "1", "--zero", "1", "--sequence-parallel",
            "--recompute", "selective", "--recompute-modules", "layernorm,moe_act", "--precision", "mxfp8"]
    assert main([*base, "--seq-length", "131072", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["long_context"]["seq_length"] == 131072 and out["long_context"]["fitted_max_seq_length"] == 8192
    assert main([*base, "--seq-length", "131072"]) == 0
    assert "caution: the plan's sequences of 131,072 tokens are longer" in " ".join(capsys.readouterr().out.split())
    assert main([*base, "--seq-length", "4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["long_context"] is None


def test_moe_settings_are_judged_on_moe_rows_only():
    """Per-op recompute was run by published dense rows on Hopper (torchtitan's) but by no MoE row, where it
    replays every second expert GEMM: torchtitan's plans for Qwen3-30B-A3B on H100 (per-op recompute) are
    told so; the same setting on a dense model is not. ZeRO-3 on an MoE model was run on Hopper (the
    Qwen3-235B-A22B FSDP row of the Model Zoo) and on Blackwell (torchtitan's Qwen3-30B-A3B FSDP x EP rows on
    B200), so it is named on neither; per-op recompute of an MoE layer still is, on both."""
    from planner.analysis import coverage

    plan = cm.Plan(dp=32, ep=2, zero_stage=3, recompute="op", global_batch_size=256)
    named = {u["setting"]: u["published_values"] for u in coverage.unvalidated("hopper", plan, moe=True)}
    assert "op" not in named["moe_recompute"] and "moe_zero_stage" not in named and "recompute" not in named
    assert coverage.unvalidated("hopper", plan) == []
    assert named == {"moe_recompute": ["full", "none", "selective"]}
    blackwell = {u["setting"]: u["published_values"] for u in coverage.unvalidated("blackwell", plan, moe=True)}
    assert "moe_zero_stage" not in blackwell and "op" not in blackwell["moe_recompute"]
    out = suggest_json(["qwen3-30b-a3b", "dgx-h100", "--gpus", "32", "--gbs", "256", "--framework", "torchtitan"])
    assert out["plans"][0]["plan"]["recompute"] == "op"
    assert {"setting": "moe_recompute", "value": "op", "generation": "hopper",
            "published_values": ["full", "none", "selective"]} in out["unvalidated_settings"]
