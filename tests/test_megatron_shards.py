"""The parameters Megatron-LM itself puts on each GPU under planner's tensor, pipeline and expert splits
(tests/tools/megatron_shards.py, run by hand with Megatron-LM d98e8a64: initialize_model_parallel on a stand-in
process group for each pipeline stage's first GPU, then gpt_builder for each of its model chunks on the meta
device) against costmodel/stage.py stage_params, the count the memory model and the gradient sync read. If the
argument test fails after an emitter change, rerun the tool with --write."""
from __future__ import annotations

import json

import pytest
from emit_support import DATA, shard_case_job

from costmodel.stage import stage_params
from costmodel.step import stage_mixes
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


def args_value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


@pytest.mark.parametrize("cid", sorted(SHARDS))
def test_the_stored_shards_are_of_todays_arguments(cid):
    _, j = case(cid)
    assert megatron.flat_args(j) + megatron.data_args(j) == SHARDS[cid]["args"]


@pytest.mark.parametrize("cid", sorted(SHARDS))
def test_each_gpu_holds_the_parameters_planner_counts(cid):
    """Stage by stage: Megatron's count, with what planner does not count set aside, is stage_params' total, and
    its routed experts (allreduce=False) are stage_params' experts. Two adjustments by hand: the vocabulary rows
    Megatron pads (to a multiple of 128 x tp, --make-vocab-size-divisible-by's default) are not the model's, and
    MLA's down projections, which the local modules split over TP (ColumnParallelLinear), are whole on every TP
    rank in the Transformer Engine spec a GPU run uses (multi_latent_attention.py: TELinear in parallel_mode
    "duplicated")."""
    spec, j = case(cid)
    m, tp = j.cm_model, j.plan.tp
    vocab_rows = int(args_value(SHARDS[cid]["args"], "--vocab-size"))
    padded = -(-vocab_rows // (128 * tp)) * 128 * tp
    for built, mix in zip(SHARDS[cid]["stages"], stage_mixes(m, j.plan), strict=True):
        r = built["ranks"]
        assert (r["tp"], r["ep"], r["etp"]) == (0, 0, 0)
        total, experts, _ = stage_params(m, j.plan, mix, r["pp"])
        padding = (padded - m.vocab_size) * m.hidden_size // tp * vocabulary_copies(j, r["pp"])
        te = built["parameters"] + built["split"].get("mla_down", 0) * (tp - 1)
        counted = te - sum(both(built, k) for k in NOT_COUNTED) - padding
        assert counted == pytest.approx(total, abs=0.5), (r, counted - total)
        assert built["experts"] - both(built, "expert_bias") == pytest.approx(experts, abs=0.5)


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
