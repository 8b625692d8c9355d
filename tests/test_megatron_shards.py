"""The parameters Megatron-LM itself puts on each GPU under planner's tensor, pipeline and expert splits
(tests/tools/megatron_shards.py, run by hand with Megatron-LM d98e8a64: initialize_model_parallel on a stand-in
process group for each pipeline stage's first GPU, then gpt_builder for each of its model chunks on the meta
device, wrapped as training.get_model wraps them) against costmodel/stage.py stage_params, the count the memory model
and the gradient sync read, and Megatron's gradient buffers against the model states planner prices. If the argument
test fails after an emitter change, rerun the tool with --write."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from emit_support import DATA, shard_case_job

from costmodel.stage import stage_params
from costmodel.step import stage_mixes, stage_states
from planner.emit import megatron

SHARDS = json.loads((DATA / "megatron" / "shard_results.json").read_text())
# Parameters planner does not count (flops.parameters_per_layer: biases ignored; embedding_parameters: learned
# positions ignored; the per-head query/key norms, attention sinks, shared-expert gate and MTP's three norms,
# each a few vectors per layer), set aside from Megatron's count by the kind the tool recorded.
NOT_COUNTED = ("bias", "expert_bias", "position_embeddings", "qk_norm", "sinks", "shared_expert_gate", "mtp_norm")


def case(cid: str):
    c = SHARDS[cid]
    return shard_case_job(c["model"], c["plan"])


def both(stage: dict, kind: str) -> int:
    return stage["whole"].get(kind, 0) + stage["split"].get(kind, 0)


def vocabulary_copies(j, pp_rank: int) -> int:
    """Embedding-shaped tensors (vocabulary x h, split over TP) on a stage: the embedding on the first, the output
    layer on the last (a tied model's too when pp > 1), and there an embedding for the MTP block when pp > 1."""
    last, m = j.plan.pp - 1, j.cm_model
    copies = int(pp_rank == 0)
    if pp_rank == last:
        copies += int(not (m.tie_embeddings and j.plan.pp == 1)) + int(bool(m.mtp_layers) and j.plan.pp > 1)
    return copies


@pytest.mark.parametrize("cid", sorted(SHARDS))
def test_the_stored_shards_are_of_todays_arguments(cid):
    _, j = case(cid)
    assert megatron.flat_args(j) + megatron.data_args(j) == SHARDS[cid]["args"]


def counted(built: dict, j) -> tuple[float, float]:
    """(all, routed-expert) parameters of a built stage in planner's terms: what planner does not count set aside,
    the vocabulary rows Megatron pads (to a multiple of 128 x tp, --make-vocab-size-divisible-by's default) taken
    off, and MLA's down projections, which the local modules split over TP (ColumnParallelLinear), counted whole on
    every TP rank, as the Transformer Engine spec a GPU run uses builds them (multi_latent_attention.py: TELinear in
    parallel_mode "duplicated")."""
    m, tp = j.cm_model, j.plan.tp
    padded = -(-m.vocab_size // (128 * tp)) * 128 * tp
    padding = (padded - m.vocab_size) * m.hidden_size // tp * vocabulary_copies(j, built["ranks"]["pp"])
    te = built["parameters"] + built["split"].get("mla_down", 0) * (tp - 1)
    return (te - sum(both(built, k) for k in NOT_COUNTED) - padding,
            built["experts"] - both(built, "expert_bias"))


def stages(cid: str):
    """(built stage, planner's stage cost terms, job) for each pipeline stage of a case."""
    _, j = case(cid)
    for built, mix in zip(SHARDS[cid]["stages"], stage_mixes(j.cm_model, j.plan), strict=True):
        total, experts, in_layers = stage_params(j.cm_model, j.plan, mix, built["ranks"]["pp"])
        yield built, SimpleNamespace(params=total, expert_params=experts, layer_params=in_layers), j


@pytest.mark.parametrize("cid", sorted(SHARDS))
def test_each_gpu_holds_the_parameters_planner_counts(cid):
    """Stage by stage: Megatron's count, in planner's terms (`counted`), is stage_params' total, and its routed
    experts (allreduce=False) are stage_params' experts."""
    for built, stage, j in stages(cid):
        assert (built["ranks"]["tp"], built["ranks"]["ep"], built["ranks"]["etp"]) == (0, 0, 0)
        total, experts = counted(built, j)
        assert total == pytest.approx(stage.params, abs=0.5), (built["ranks"], total - stage.params)
        assert experts == pytest.approx(stage.expert_params, abs=0.5)


@pytest.mark.parametrize("cid", sorted(SHARDS))
def test_gradients_and_optimizer_shards_as_planner_holds_them(cid):
    """Megatron's gradient buffers (DistributedDataParallel under the emitted arguments) against the model states
    planner prices (step.stage_states): the gradient dtype is the plan's (bf16 with --grad-reduce-in-bf16, fp32
    without it); the dense weights reduce over dp x cp ranks and the routed experts over expert-DP; so planner's
    gradient bytes are the buffers' parameters at that dtype, and its optimizer bytes, the distributed optimizer's
    fp32 master weights and two Adam moments (12 B) of each rank's 1/size slice of every buffer (without it, ZeRO 0,
    of every parameter on every rank, and no 16-bit parameter buffer), are the slices' but
    for the buffers' padding (each parameter starts on a 64-element boundary and each bucket ends on a multiple of
    the group size, param_and_grad_buffer.py), a millionth of the parameters or less."""
    for built, stage, j in stages(cid):
        plan, buffers = j.plan, built["gradient_buffers"]
        assert {b["grad_dtype"] for b in buffers} == {{"bf16": "bfloat16", "fp32": "float32"}[plan.grad_comm_dtype]}
        assert all(b["param_buffer"] == (plan.zero_stage >= 1) for b in buffers)  # the distributed optimizer's
        assert {b["dp_size"] for b in buffers if not b["experts"]} == {plan.dp * plan.cp}
        assert {b["dp_size"] for b in buffers if b["experts"]} <= {plan.expert_dp}
        dense_buffers = sum(b["numel"] for b in buffers if not b["experts"])
        expert_buffers = sum(b["numel"] for b in buffers if b["experts"])
        assert dense_buffers >= built["parameters"] - built["experts"] and expert_buffers >= built["experts"]
        padding = ((dense_buffers - built["parameters"] + built["experts"]) / (plan.dp * plan.cp)
                   + (expert_buffers - built["experts"]) / plan.expert_dp)
        assert padding <= 1e-6 * built["parameters"]  # bucket ends and 64-element parameter starts
        total, experts = counted(built, j)
        per_param, states = stage_states(plan, stage, "hopper")
        assert states.gradients == pytest.approx(per_param.gradients * total, abs=1.0)
        shards = (plan.dp * plan.cp, plan.expert_dp) if plan.zero_stage >= 1 else (1, 1)  # else whole on every rank
        dense_slice, expert_slice = (total - experts) / shards[0], experts / shards[1]
        assert states.optimizer_states == pytest.approx(12.0 * (dense_slice + expert_slice), abs=1.0)


def test_deepseek_v3_middle_stage_by_hand():
    """DeepSeek-V3 at tp 2, ep 8, pp 8 (8 MoE layers on pipeline rank 1), per GPU from its config.json (h 7168, 128
    heads of 128 + 64 RoPE, v 128, q LoRA 1536, kv LoRA 512, 256 experts of 2048, one shared): MLA down projections
    and latent norms, the two layer norms and the router whole; query up, key/value up, output projection and
    shared expert halved; 256 / 8 = 32 routed experts."""
    h = 7168
    whole = h * 1536 + h * (512 + 64) + 1536 + 512 + 2 * h + 256 * h
    halved = (1536 * 128 * 192 + 512 * 128 * (128 + 128) + 128 * 128 * h + 3 * h * 2048) // 2
    routed = 32 * 3 * h * 2048
    _, j = case("deepseek-v3-tp2-pp8-ep8")
    total, experts, _ = stage_params(j.cm_model, j.plan, stage_mixes(j.cm_model, j.plan)[1], 1)
    assert (total, experts) == (8 * (whole + halved + routed), 8 * routed)
    built = SHARDS["deepseek-v3-tp2-pp8-ep8"]["stages"][1]
    assert built["parameters"] == 8 * (whole + halved + routed) - built["split"]["mla_down"]  # local: split in two
