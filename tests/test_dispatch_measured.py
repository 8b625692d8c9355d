"""The model's expert-parallel dispatch (costmodel/stage.py ep_pass_seconds) against published kernel latencies.

NVIDIA, "Scalable Training of Mixture-of-Experts Models with Megatron Core" (arXiv:2603.07685, Mar 2026), Sec 4.2.2
Table 7: one dispatch and one combine of DeepSeek-V3's tokens (hidden 7,168, 4,096 tokens a GPU, 256 experts, top 8),
in microseconds, with HybridEP and with Megatron's all-to-all dispatcher, on GB200 (NVL72) and H100 at EP 8-64. The
figures are typed in below from the table. The model prices one dispatch as half of `ep_pass_seconds` (a dispatch and a
combine of the same bytes in bf16; HybridEP as Plan.ep_dispatch "deepep").

What the comparison says (validation/README.md, "The Megatron-core MoE report"): inside one NVL72 rack at EP 16-64 the
model's HybridEP dispatch is within 12% of the table; at EP 8 it is 49% slow, because it moves every routed copy
where HybridEP sends a token once to each GPU that holds one of its experts (priced so, the fitted rows got worse:
not shipped). The all-to-all dispatcher's figures include Megatron's own work around NCCL's all-to-all, which the
model does not price, and the H100 ones cross nodes: the rest of the table is kept for the record, not bounded.
"""
from __future__ import annotations

import pytest

from costmodel import moe, stage
from costmodel.types import Efficiency, Plan
from planner.inputs import loading

# (cluster, EP) -> (HybridEP dispatch, all-to-all dispatch) in microseconds, Table 7 of arXiv:2603.07685.
TABLE_7_DISPATCH_US = {
    ("gb200-nvl72", 8): (391, 735), ("gb200-nvl72", 16): (578, 743),
    ("gb200-nvl72", 32): (612, 769), ("gb200-nvl72", 64): (675, 930),
    ("dgx-h100", 8): (661, 1265), ("dgx-h100", 16): (1485, 5774),
    ("dgx-h100", 32): (3064, 8059), ("dgx-h100", 64): (4626, 9164),
}


def dispatch_us(cluster_name: str, ep: int, dispatcher: str) -> float:
    """The model's one dispatch of 4,096 DeepSeek-V3 tokens a GPU over `ep` GPUs, in microseconds."""
    model = loading.load_model_spec("deepseek-v3", 4096).to_model()
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), ep)
    plan = Plan(tp=1, pp=1, dp=ep, ep=ep, micro_batch_size=1, global_batch_size=ep, ep_dispatch=dispatcher)
    return 1e6 * stage.ep_pass_seconds(model, cluster, plan, Efficiency(), moe.ExpertLayout(ep=ep, etp=1)) / 2


def test_hybridep_dispatch_inside_a_rack_at_ep_16_to_64():
    """GB200, EP 16, 32 and 64 (one NVL72 domain): the model's HybridEP dispatch within 15% of Table 7."""
    for ep in (16, 32, 64):
        measured = TABLE_7_DISPATCH_US[("gb200-nvl72", ep)][0]
        model = dispatch_us("gb200-nvl72", ep, "deepep")
        print(f"GB200 EP {ep}: HybridEP {measured} us, model {model:.0f} us ({model / measured - 1:+.0%})")
        assert model == pytest.approx(measured, rel=0.15)

