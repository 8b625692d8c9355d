"""Ratchet: the cost model's error on the published runs (validation/runs.yaml) may not get worse.

Bounds are the figures reached when this test was last tightened (see README "Accuracy"), plus
a hair for float noise. Lower them when the model improves; never raise them to land a change.

The in-sample bounds score the shipped constants on the rows they were fitted on. The
out-of-sample bounds (`planner validate --leave-one-source-out`) score each source group with
constants fitted on the other groups only, so a mechanism or constant tuned on one source's rows
cannot hide there; every row must be scored, none left out.
"""
import pytest

from planner.validation import runs as validation

# Re-based 2026-11-30 three times: after the audit's corrections to the rows themselves (each now runs
# the mechanisms its cited code runs); after 100 Megatron-Bridge MoE rows joined (group mbridge-moe) and
# the fit's objective became the mean of the groups' MAPEs (each source weighs the same); and when 46
# Megatron-Bridge dense rows (mbridge-dense, 44 scored), torchtitan's two Llama 3.1 405B long-context
# rows (in the torchtitan group: same publisher and framework, so two rows do not weigh a ninth of the
# objective) and 28 full-shard FSDP rows without TP or PP (fsdp-2023-2024: MosaicML llm-foundry MPT and
# IBM fms-fsdp Llama 2 on A100 and H100) joined and the constants were refit on all 234 rows
# (`planner validate --fit-on all`, from priors that now include MoE host sync 0).
STEP_MAPE_BOUND = 0.093      # reached 0.0930 over 234 rows (0.0863 over the 160 before the dense and FSDP rows)
GROUP_STEP_BOUNDS = {        # (MAPE, max) per source group, reached + a hair
    "bloom": (0.071, 0.087), "korthikanti-2022": (0.057, 0.148), "megatron-2021": (0.056, 0.165),
    "mlperf": (0.003, 0.007), "nemo": (0.078, 0.180),
    # 9 Llama 3.1 8B rows of torchtitan's benchmarks (3.3% before) and the two 405B long-context rows
    # (32k cp 1: -11.7%; 64k cp 2: -15.8% since the K/V the row exchanges are repeated to 16 heads per
    # rank, Plan.repeat_kv; -21.6% before): reached 5.25%, max 15.75%
    "torchtitan": (0.053, 0.158),
    # MoE: 10.6% over 100 rows; the worst are B200/B300 rows whose releases halved the throughput of
    # an identical earlier layout (validation/README.md, "MoE rows")
    "mbridge-moe": (0.107, 0.646),
    # dense Llama 3: reached 10.55% over 44 rows, max 30.98% (25.11 Llama 3 8B H100 Megatron-FSDP, predicted
    # slower); the model is too slow on every H100 and GB300 row and fast on the GB200 70B rows
    # (validation/README.md, "Megatron-Bridge dense rows and torchtitan Table 6")
    "mbridge-dense": (0.106, 0.310),
    # full-shard FSDP, no TP/PP: reached 10.10% over 28 rows, max 24.00%; every H100 row predicted fast
    # (mean -13%), the A100 rows near (+3%) (validation/README.md, "FSDP rows")
    "fsdp-2023-2024": (0.102, 0.240),
}
# Memory over the 11 torchtitan rows with a published peak: 2.18% / 7.38% over the 9 before the 405B rows.
# Those were 12.1% / 12.8% low while their weights were counted at 2 B; since torchao's float8 all-gather
# is counted at the 1 B it keeps, and the pipeline's per-micro-batch receive buffers and kept logits
# (Plan.pipeline_buffers), the repeated K/V (Plan.repeat_kv) and the all-gathered K/V are counted, they
# are 17.1% / 16.4% low (validation/README.md: what is still missing is not identified): reached 4.81%,
# max 17.12%.
MEMORY_MAPE_BOUND = 0.049    # overall, reached 0.0481 over 11 rows with a published peak
MEMORY_MAX_BOUND = 0.172     # overall, reached 0.1712 (torchtitan 405B 32k row)
GROUP_MEMORY_BOUNDS = {"torchtitan": (0.049, 0.172)}

# Out of sample: each source predicted by constants fitted on the other sources (the measured
# figures, printed to 0.1% by benchmarks/accuracy_tables.py, plus 0.1%). Reached when set: 9.97% over 160
# rows; 12.7% over 234 with the dense, 405B and FSDP rows. mbridge-moe left out is 16.6%: without MoE rows
# the host-synchronisation constant stays at its prior 0.
LOO_STEP_MAPE_BOUND = 0.128
LOO_GROUP_STEP_MAPE_BOUNDS = {
    "bloom": 0.072, "korthikanti-2022": 0.102, "megatron-2021": 0.059, "mlperf": 0.009, "nemo": 0.089,
    "torchtitan": 0.162, "mbridge-moe": 0.167, "mbridge-dense": 0.109, "fsdp-2023-2024": 0.105,
}
# Leave one GPU generation out (fit on the other generations): reached 10.05% over 160 rows; 10.3% over
# 234 (ampere 6.2%, hopper 11.7%, blackwell 11.0%).
LOGO_STEP_MAPE_BOUND = 0.104
LOGO_GENERATION_STEP_MAPE_BOUNDS = {"ampere": 0.063, "hopper": 0.118, "blackwell": 0.111}


@pytest.fixture(scope="module")
def runs():
    return validation.load_runs()


@pytest.fixture(scope="module")
def scored(runs):
    return [r for r in runs if not r.exclude]


@pytest.fixture(scope="module")
def summary(runs):
    return validation.summarise(validation.evaluate(runs))


@pytest.fixture(scope="module")
def out_of_sample(runs):
    """One `validate --leave-one-source-out` computation (13 fits: all rows, each source group left
    out, each generation left out), shared by the tests below. About 490 CPU seconds over the 206
    scored rows (410 s wall on this 2-core machine)."""
    from planner.validation.generalise import leave_one_out

    return leave_one_out(runs)


def test_step_time_mape_does_not_regress(summary, scored):
    assert summary["overall"]["step_time"]["n"] == len(scored)  # every row is scored
    assert summary["overall"]["step_time"]["mape"] <= STEP_MAPE_BOUND
    assert {g for g in summary if g != "overall"} == set(GROUP_STEP_BOUNDS), "a source group was added: bound it"
    for group, (mape, worst) in GROUP_STEP_BOUNDS.items():
        assert summary[group]["step_time"]["mape"] <= mape, group
        assert summary[group]["step_time"]["max_abs"] <= worst, group


def test_memory_mape_does_not_regress(summary, scored):
    assert summary["overall"]["memory"]["n"] == len([r for r in scored if r.measured.peak_memory_gib is not None])
    assert summary["overall"]["memory"]["mape"] <= MEMORY_MAPE_BOUND
    assert summary["overall"]["memory"]["max_abs"] <= MEMORY_MAX_BOUND
    with_peaks = {g for g in summary if g != "overall" and summary[g]["memory"]["n"]}
    assert with_peaks == set(GROUP_MEMORY_BOUNDS), "a source group with published peaks was added: bound it"
    for group, (mape, worst) in GROUP_MEMORY_BOUNDS.items():
        assert summary[group]["memory"]["mape"] <= mape, group
        assert summary[group]["memory"]["max_abs"] <= worst, group


def test_out_of_sample_mape_does_not_regress(out_of_sample, scored):
    loo = out_of_sample["leave_one_source_out"]
    assert loo["overall"]["step_time"]["n"] == len(scored)
    assert sorted(r["id"] for r in loo["rows"]) == sorted(r.id for r in scored)  # each row once
    assert set(loo["held_out"]) == set(LOO_GROUP_STEP_MAPE_BOUNDS), "a source group was added: bound it"
    assert loo["overall"]["step_time"]["mape"] <= LOO_STEP_MAPE_BOUND
    for group, bound in LOO_GROUP_STEP_MAPE_BOUNDS.items():
        assert loo["held_out"][group]["step_time"]["mape"] <= bound, group


def test_generation_split_mape_does_not_regress(out_of_sample, scored):
    logo = out_of_sample["leave_one_generation_out"]
    assert logo["overall"]["step_time"]["n"] == len(scored)
    assert set(logo["held_out"]) == set(LOGO_GENERATION_STEP_MAPE_BOUNDS), "a GPU generation was added: bound it"
    assert logo["overall"]["step_time"]["mape"] <= LOGO_STEP_MAPE_BOUND
    for generation, bound in LOGO_GENERATION_STEP_MAPE_BOUNDS.items():
        assert logo["held_out"][generation]["step_time"]["mape"] <= bound, generation


def test_held_out_constants_never_saw_the_held_out_rows(out_of_sample, scored):
    groups = {r.group for r in scored}
    for group, s in out_of_sample["leave_one_source_out"]["held_out"].items():
        assert s["train_rows"] == len([r for r in scored if r.group != group]), group
    assert len(out_of_sample["leave_one_source_out"]["held_out"]) == len(groups)


def test_every_row_is_legal_and_cited(runs):
    import re

    # a citation someone can follow: an arXiv id, a repository at a commit, or a URL
    citation = re.compile(r"arXiv:\d{4}\.\d{4,5}|@[0-9a-f]{7,40}\b|https?://")
    for run in runs:
        assert citation.search(run.source), (run.id, run.source)
        assert run.measured.step_time_s > 0
        if run.measured.step_time_kind == "derived":
            assert run.measured.derivation, run.id


# Plan and cluster settings that select a mechanism of the cost model for a row: when a row sets one,
# its notes say where it was read or `assumed` lists it.
MECHANISMS = ("overlap_dp_comm", "overlap_pp_comm", "fused_elementwise", "fused_cross_entropy", "zero3_gather_unit",
              "grad_reduce", "grad_dtype", "zero3_reshard", "fp8_recipe", "weight_casts", "bf16_layers_start",
              "bf16_layers_end", "tp_comm_overlap", "offload_layers", "lowp_param_gather", "recompute_modules",
              "ep_overlap", "ep_dispatch", "moe_cuda_graphs", "optimizer_states", "fp8_attention", "cp_comm")
# Under a low-precision format these select how it runs whether or not the row sets them; so does
# tp_comm_overlap under tensor parallelism.
LOW_PRECISION = {"fp8", "mxfp8", "nvfp4"}
LOW_PRECISION_SETTINGS = ("fp8_recipe", "weight_casts", "lowp_param_gather")


def test_every_assumed_entry_names_a_setting(runs):
    """`assumed` entries are a plan or cluster field, or 'gpu' (the catalog GPU's unprinted figures),
    optionally followed by ': why'."""
    from planner.inputs.specs import ClusterSpec, PlanSpec

    known = set(PlanSpec.model_fields) | set(ClusterSpec.model_fields) | {"gpu"}
    for run in runs:
        for entry in run.assumed:
            assert entry.split(":", 1)[0] in known, (run.id, entry)


def test_every_mechanism_setting_is_cited_or_assumed(runs):
    from planner.inputs.catalogs import resolve_gpu

    for run in runs:
        text = (run.notes or "") + " " + " ".join(run.assumed)
        for field in MECHANISMS:
            if field in run.plan.model_fields_set:
                assert field in text, (run.id, field)
        if run.plan.precision in LOW_PRECISION:
            for field in LOW_PRECISION_SETTINGS:
                assert field in text, (run.id, field)
        if run.plan.tp > 1:
            assert "tp_comm_overlap" in text, run.id
        for field in ("network_busbw_gbytes_per_s", "nvlink_busbw_gbytes_per_s"):
            if getattr(run.cluster, field) is not None:
                assert field in text, (run.id, field)
        gpu = resolve_gpu(run.cluster.gpu)
        if gpu.power_limit_watts is not None:  # the power-cap law is a model, not a measurement
            assert any(e.startswith("gpu") and "power" in e for e in run.assumed), run.id


def test_memory_fit_recovers_a_known_allocator_slack():
    """Round trip on synthetic peaks: rows whose 'measured' peak is the model's own prediction with
    12% slack must fit back to 12% (fit_memory's grid has 0.25% steps)."""
    from dataclasses import replace

    from costmodel.types import Efficiency
    from planner.validation import fit

    truth = replace(Efficiency(), memory_fragmentation_fraction=0.12)
    rows = [r for r in validation.load_runs() if r.measured.peak_memory_gib is not None]
    synthetic = [r.model_copy(update={"measured": r.measured.model_copy(
        update={"peak_memory_gib": validation.predict(r, truth).predicted_memory_gib})}) for r in rows]
    fitted, mape = fit.fit_memory(synthetic, Efficiency())
    assert fitted.memory_fragmentation_fraction == pytest.approx(0.12, abs=0.0025)
    assert mape < 0.003


def test_parallel_fits_reach_what_fit_reaches(runs):
    """fit_many (the processes of --leave-one-source-out and --fit-on) gives each set of rows the
    constants fit + fit_memory give it, with any number of workers."""
    from planner.validation import fit

    sets = [[r for r in runs if r.group in ("mlperf", "bloom")], [r for r in runs if r.group == "torchtitan"][:3]]
    expected = []
    for rows in sets:
        eff, mape = fit.fit(rows, rounds=2)
        eff, memory = fit.fit_memory(rows, eff)
        expected.append((eff, mape, memory))
    assert fit.fit_many(sets, workers=2, rounds=2) == expected
    assert fit.fit_many(sets, workers=1, rounds=2) == expected


def test_shipped_constants_are_what_the_fit_reaches(out_of_sample):
    """costmodel.types.Efficiency's FITTED defaults are the output of `planner validate --fit-on
    all` (from the unfitted priors), so anyone can reproduce them; --leave-one-source-out's
    in-sample fit is that same fit."""
    from costmodel.types import Efficiency

    fitted = out_of_sample["in_sample"]["fitted"]
    shipped = Efficiency()
    for name, value in fitted.items():
        assert getattr(shipped, name) == pytest.approx(value, rel=0.005, abs=1e-9), name
