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
