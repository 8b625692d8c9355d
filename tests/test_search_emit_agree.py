"""The search's framework filter and the emitters mirror the same framework rules: every plan that
`suggest --framework X` returns must be accepted by X's emitter (`suggest --emit X` must work)."""
import pytest

from planner.analysis import score as report
from planner.emit import build_job, render
from planner.inputs import loading
from planner.search import suggest
from planner.search.space import SearchSpec

CASES = [("llama2-7b", "dgx-h100", 16, 64), ("gpt3-175b", "dgx-a100", 128, 256), ("llama3-70b", "dgx-h100", 64, 128),
         ("megatron-3.6b", "dgx-a100", 32, 256), ("nemotron-4-15b", "hgx-h200", 32, 128)]


@pytest.mark.parametrize("framework", ["megatron", "deepspeed"])
@pytest.mark.parametrize("model_name,cluster_name,gpus,gbs", CASES)
def test_every_suggested_plan_is_emittable(framework, model_name, cluster_name, gpus, gbs):
    model = loading.load_model_spec(model_name, global_batch_size=gbs)
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), gpus)
    # DeepSpeed reduces gradients after the backward under a pipeline or without ZeRO (frameworks/deepspeed.py):
    # the search offers its plans there with the sync after the backward, which its emitter writes.
    spec = SearchSpec(model.to_model(), cluster, gbs, frameworks=(framework,))
    result = suggest.run(spec, suggest.Options(top_k=5))
    # Each case has more than 5 legal (tp, pp, dp) layouts that fit (16-128 GPUs of 80-141 GB, models
    # with 32-96 layers), so the check runs on 5 plans, not on whatever happens to come back.
    assert len(result.ranked) == 5
    for ranked in result.ranked:
        d = report.to_dict(report.score(model, cluster, ranked.plan))
        files = render(build_job(model, d), framework)  # raises PlannerError naming the rule if refused
        assert any(name.endswith("launch.sh") for name in files)


@pytest.mark.parametrize("model_name,cluster_name,gpus,gbs", [("megatron-1.7b", "dgx-h100", 16, 64),
                                                             ("qwen3-30b-a3b", "dgx-b200", 16, 128)])
def test_each_ranked_plan_names_the_frameworks_that_launch_it(model_name, cluster_name, gpus, gbs):
    """`suggest --json` gives each plan the searched frameworks that launch it as scored, and those emit it:
    each listed framework's emitter accepts the plan; each other one refuses it or runs it otherwise than
    scored (its kernels, loss or runtime: frameworks.base.priced_otherwise). torchtitan has no definition of
    Megatron's 1.7B GPT (GeLU, LayerNorm, learned positions: frameworks/torchtitan.py match_flavour), so its
    rules alone would not make it a launcher."""
    from planner import frameworks
    from planner.errors import PlannerError
    from planner.frameworks.base import priced_otherwise
    from planner.search.report import suggest_report

    model = loading.load_model_spec(model_name, global_batch_size=gbs)
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), gpus)
    spec = SearchSpec(model.to_model(), cluster, gbs)
    plans = suggest_report(model, spec, suggest.Options(top_k=3))["plans"]
    assert plans and all(d["frameworks"] for d in plans)
    if model_name == "megatron-1.7b":
        assert all("torchtitan" not in d["frameworks"] for d in plans)
    for d in plans:
        job = build_job(model, {k: v for k, v in d.items() if k != "frameworks"})
        for framework in spec.frameworks:
            if framework in d["frameworks"]:
                assert any(name.endswith(".sh") for name in render(job, framework))
            elif not priced_otherwise(frameworks.get(framework), model.to_model(), job.plan):
                with pytest.raises(PlannerError):
                    render(job, framework)


def test_frameworks_without_the_model_are_not_searched_when_another_builds_it():
    """MPT-7B (ALiBi, GeLU, LayerNorm): Megatron-LM refuses ALiBi and torchtitan has no definition of it,
    so only DeepSpeed launches it. Before, torchtitan's rules stayed in the search and its ZeRO-3 + TP 8 +
    sequence-parallel + AsyncTP plan ranked first with no framework to launch it (found by fuzzing suggest).
    Now torchtitan is left out with a note, and every ranked plan names a launcher."""
    from planner.frameworks import building
    from planner.search.report import suggest_report

    model = loading.load_model_spec("mpt-7b", global_batch_size=1000)
    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 16)
    spec = SearchSpec(model.to_model(), cluster, 1000, fixed={"tp": 8, "recompute": "full"})
    out = suggest_report(model, spec, suggest.Options(top_k=2))
    assert [d["frameworks"] for d in out["plans"]] == [["deepspeed"], ["deepspeed"]]
    assert any(n.startswith("torchtitan not searched: planner's torchtitan flavours (Llama 3, Qwen3, Qwen3-MoE") and
               "have no 'mpt-7b'" in n
               for n in out["search"]["notes"])
    # When no framework searched has a definition, all stay (their rules, and the launch-gap warning).
    assert building(("torchtitan",), model.to_model()) == (("torchtitan",), {})
    assert building(("megatron", "deepspeed"), model.to_model()) == (("megatron", "deepspeed"), {})


@pytest.mark.parametrize("model_name,cluster_name,gpus,gbs", [
    ("mpt-7b", "dgx-a100", 32, 256), ("gpt3-175b", "dgx-h100", 64, 128), ("nemotron-4-15b", "dgx-b200", 16, 64),
    ("tests/data/hf_configs/gemma-2-27b.json", "dgx-h100", 32, 128),
    ("tests/data/hf_configs/qwen1.5-moe-a2.7b.json", "dgx-h100", 16, 64), ("mixtral-8x7b", "gb200-nvl72", 32, 128)])
def test_every_ranked_plan_has_a_launcher(model_name, cluster_name, gpus, gbs):
    """Over all frameworks, each ranked plan names one that launches it (its rules pass and it builds the
    model): Gemma 2 (gated GELU: Megatron-LM refuses it, torchtitan has no definition) is DeepSpeed's alone,
    Qwen1.5-MoE (experts: DeepSpeed refuses them; no torchtitan flavour) Megatron-LM's alone."""
    from planner.search.report import suggest_report

    model = loading.load_model_spec(model_name, seq_length=4096 if model_name.endswith(".json") else None,
                                    global_batch_size=gbs)
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), gpus)
    out = suggest_report(model, SearchSpec(model.to_model(), cluster, gbs), suggest.Options(top_k=3))
    assert out["plans"] and all(d["frameworks"] for d in out["plans"]), [d["frameworks"] for d in out["plans"]]


def test_a_refusal_names_the_frameworks_left_out(capsys):
    """Llama 4 Maverick at 32k tokens on 128 B200: Megatron-LM has no chunked attention and DeepSpeed refuses
    every split, and torchtitan, left out of the search as it has no Llama 4 definition, is named in the
    one-line refusal rather than silently missing from its reasons (before 585f99e its rule was one of them)."""
    from conftest import one_line_error

    one_line_error(capsys, ["suggest", "llama4-maverick", "dgx-b200", "--gpus", "128", "--seq-length", "32768",
                            "--gbs", "8"], "(torchtitan not searched: no definition of this model)")


def test_a_model_no_framework_builds_as_written_is_refused(capsys):
    """OLMoE normalizes all heads' queries (and all heads' keys) at once (Transformers v4.57.1 OlmoeAttention:
    q_norm = OlmoeRMSNorm(hidden_size)); Megatron-LM's --qk-layernorm normalizes each head, another model
    (Megatron-Bridge carries its own attention class for OLMoE). Before, suggest ranked Megatron-LM plans whose
    launch trained per-head norms; now the one-line refusal names the rule."""
    from conftest import one_line_error

    one_line_error(capsys, ["suggest", "tests/data/hf_configs/olmoe-1b-7b.json", "dgx-h100", "--gpus", "16",
                            "--seq-length", "4096", "--gbs", "64"], "not over all heads at once")


def test_a_plan_is_labelled_only_with_the_frameworks_that_run_it_as_scored():
    """Qwen3-30B-A3B on 8 H100, 512 sequences: the ranked plans are scored with Megatron-LM's cuDNN attention,
    fused projections and compiled vocab-parallel loss. torchtitan's rules let it run them, but with FlexAttention
    or flash, fused_qkv projections and its chunked loss, 43.2 s where the plan says 36.2 s: it was labelled
    torchtitan too, and `suggest --emit torchtitan` wrote the 36.2 s plan's files (an audit). Now only Megatron-LM
    labels them, and torchtitan's files are its own best plan, scored as it runs."""
    from planner import frameworks
    from planner.frameworks.base import priced_otherwise
    from planner.search.report import suggest_report

    model = loading.load_model_spec("qwen3-30b-a3b", global_batch_size=512)
    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8)
    plans = suggest_report(model, SearchSpec(model.to_model(), cluster, 512), suggest.Options(top_k=5))["plans"]
    assert plans and all("torchtitan" not in d["frameworks"] for d in plans if d["plan"]["attention_kernel"] == "cudnn")
    job = build_job(model, {k: v for k, v in plans[0].items() if k != "frameworks"})
    otherwise = priced_otherwise(frameworks.get("torchtitan"), model.to_model(), job.plan)
    assert "attention kernel cudnn" in otherwise and "loss vocab_parallel_fused" in otherwise
    assert not priced_otherwise(frameworks.get("megatron"), model.to_model(), job.plan)

