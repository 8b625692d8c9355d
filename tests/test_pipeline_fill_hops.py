"""pipeline.fill_drain_hops against an event simulation of the interleaved 1F1B order.

The order is Megatron-core's (pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving,
as described in Narayanan et al. 2021, arXiv:2104.04473, Sec 2.2.2): rank r runs (p - r - 1) x 2 + (v - 1) x p
warm-up forwards, then one forward and one backward at a time, then the remaining backwards. Virtual
micro-batch k of a rank is model chunk (k // p) % v (backwards: v - 1 minus that) of micro-batch
(k // (p v)) p + k % p. Chunk c of rank r is global stage c p + r: a forward needs the previous stage's
forward of the same micro-batch, a backward the next stage's backward (the last stage its own forward),
each a hop later when it comes from another rank. Sends do not block (overlapped p2p); an op starts once
its rank is free and its input has arrived.

With hops far shorter than a chunk's compute, the steady state hides them; what the step still waits for
is the fill and drain: the simulated step grows by 2 x fill_drain_hops hops (one forward send and one
gradient send per counted exchange).
"""
import pytest

from costmodel import pipeline


def _order(p: int, v: int, m: int, rank: int) -> list[tuple[str, int]]:
    """(kind, virtual micro-batch) in the order rank `rank` runs them."""
    total = m * v
    warmup = min(total, (p - rank - 1) * 2 + (v - 1) * p)
    ops = [("F", k) for k in range(warmup)]
    for i in range(total - warmup):
        ops += [("F", warmup + i), ("B", i)]
    ops += [("B", k) for k in range(total - warmup, total)]
    return ops


def _stage(p: int, v: int, rank: int, kind: str, k: int) -> tuple[int, int]:
    """(micro-batch, global stage) of a rank's virtual micro-batch k."""
    chunk = (k // p) % v
    if kind == "B":
        chunk = v - 1 - chunk
    return (k // (p * v)) * p + k % p, chunk * p + rank


def simulate(p: int, v: int, m: int, fwd: float, bwd: float, hop: float) -> float:
    """The step's makespan: every rank runs its order, each op at the earliest time its inputs allow."""
    orders = [_order(p, v, m, r) for r in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    cursor, free = [0] * p, [0.0] * p
    last = v * p - 1
    while any(cursor[r] < len(orders[r]) for r in range(p)):
        moved = False
        for r in range(p):
            if cursor[r] == len(orders[r]):
                continue
            kind, k = orders[r][cursor[r]]
            mb, s = _stage(p, v, r, kind, k)
            if kind == "F":
                need = [("F", mb, s - 1, hop)] if s > 0 else []
            else:
                need = [("F", mb, s, 0.0)] if s == last else [("B", mb, s + 1, hop)]
            if any((nk, nm, ns) not in done for nk, nm, ns, _ in need):
                continue
            start = max([free[r]] + [done[(nk, nm, ns)] + h for nk, nm, ns, h in need])
            free[r] = start + (fwd if kind == "F" else bwd)
            done[(kind, mb, s)] = free[r]
            cursor[r] += 1
            moved = True
        assert moved, "the simulated order deadlocked"
    return max(free)


@pytest.mark.parametrize("p, v, m", [(2, 2, 4), (2, 2, 6), (4, 2, 4), (4, 2, 8), (4, 2, 16), (8, 2, 8),
                                     (4, 12, 8), (2, 16, 2), (3, 4, 6), (6, 8, 6)])
def test_flush_waits_for_the_fill_and_drain_hops(p, v, m):
    fwd, bwd, hop = 1.0, 2.0, 1e-3
    grown = simulate(p, v, m, fwd, bwd, hop) - simulate(p, v, m, fwd, bwd, 0.0)
    assert grown == pytest.approx(2 * pipeline.fill_drain_hops(p, v) * hop, rel=1e-6)


def test_without_hops_the_simulation_is_narayanans_bubble():
    # Narayanan eq. 1 with interleaving: the flush is m v (f + b) per rank plus a bubble of (p - 1)(f + b).
    p, v, m, fwd, bwd = 4, 3, 8, 1.0, 2.0
    assert simulate(p, v, m, fwd, bwd, 0.0) == pytest.approx(m * v * (fwd + bwd) + (p - 1) * (fwd + bwd))


def test_one_stage_has_no_hops():
    assert pipeline.fill_drain_hops(1, 1) == 0


def test_the_flush_charges_the_hops_the_steady_state_hides():
    """step.pipeline_parts: PP p2p is m times the slowest stage's exposed exchanges plus v p - 1 times the
    part of one exchange the steady state hides. GPT-3 175B on 64 DGX A100 GPUs, tp 8, pp 4 x vpp 2, 8
    micro-batches, overlapped p2p: each chunk computes far longer than its 2 x 12288 x 2048 x 2-byte
    exchanges take, so nothing shows in the steady state and the flush waits for 7 whole exchanges."""
    from costmodel.stage import pp_p2p_seconds
    from costmodel.step import estimate
    from costmodel.types import Efficiency, Plan
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    model = load_model_spec("gpt3-175b").to_model()
    cluster = build_cluster(load_cluster_spec("dgx-a100"), 64)
    plan = Plan(tp=8, pp=4, vpp=2, dp=2, micro_batch_size=1, global_batch_size=16, overlap_pp_comm=True)
    eff = Efficiency()
    exchange = pp_p2p_seconds(model, cluster, plan, eff)
    assert exchange > 0
    pp_comm = estimate(model, cluster, plan, eff).time_breakdown_seconds["pp_comm"]
    assert pp_comm == pytest.approx((4 * 2 - 1) * exchange, rel=1e-9)
