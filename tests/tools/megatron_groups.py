"""Megatron-LM's own process groups for some layouts, reduced to what planner's topology prices: how many of a
group's ranks share one NVLink domain (by hand, not in CI: Megatron-LM is not on PyPI).

    MEGATRON_LM=path/to/Megatron-LM python tests/tools/megatron_groups.py [--write]

For each case, megatron.core.parallel_state.RankGenerator (d98e8a64) builds the rank lists as
initialize_model_parallel does: the dense grid (tp, cp, dp, pp in the case's order) and the experts' grid folded
over the same ranks (etp, ep, expert-DP = world / (etp x ep x pp), pp, cp 1, in the same order). For
an NVLink domain of D consecutive GPUs the tool records, per group kind, the fewest members of one group that
share a domain (over every group and every domain it touches) and whether every pipeline neighbour pair shares
one. tests/test_rank_groups.py compares costmodel/topology.py with them.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "tests" / "data" / "emit" / "megatron" / "rank_groups.json"
# (id, world, tp, cp, pp, dp, ep, etp, order, NVLink domain of the job)
CASES = [
    ("deepseek-v3-h100-1024", 1024, 2, 1, 8, 64, 64, 1, "tp-cp-ep-dp-pp", 8),
    ("deepseek-v3-gb200-256", 256, 1, 1, 8, 32, 32, 1, "tp-cp-ep-dp-pp", 64),
    ("qwen3-235b-h100-256", 256, 2, 1, 8, 16, 32, 1, "tp-cp-ep-dp-pp", 8),
    ("mixtral-etp4-h100-128", 128, 4, 1, 2, 16, 8, 4, "tp-cp-ep-dp-pp", 8),
    ("moe-etp2-h100-16", 16, 2, 1, 1, 8, 4, 2, "tp-cp-ep-dp-pp", 8),
    ("moe-cp2-gb200-512", 512, 2, 2, 4, 32, 16, 1, "tp-cp-ep-dp-pp", 64),
    ("llama-405b-mlperf-gb200-5120", 5120, 4, 2, 8, 80, 1, 4, "tp-cp-ep-dp-pp", 64),
    ("llama-405b-mlperf-tppp-gb200-5120", 5120, 4, 2, 8, 80, 1, 4, "tp-cp-ep-pp-dp", 64),
    ("odd-strides-tppp-gb200-144", 144, 1, 2, 8, 9, 1, 1, "tp-cp-ep-pp-dp", 72),
]


def fewest_sharing(groups: list[list[int]], domain: int) -> int:
    counts = [sum(1 for r in g if r // domain == d) for g in groups for d in {r // domain for r in g}]
    return min(counts)


def neighbours_share(groups: list[list[int]], domain: int) -> bool:
    return all(a // domain == b // domain for g in groups for a, b in zip(g, g[1:]))


def case_groups(world, tp, cp, pp, dp, ep, etp, order, domain) -> dict:
    from megatron.core.parallel_state import RankGenerator

    dense = RankGenerator(tp=tp, ep=1, dp=dp, pp=pp, cp=cp, order=order)
    experts = RankGenerator(tp=etp, ep=ep, dp=world // (etp * ep * pp), pp=pp, cp=1, order=order)
    assert dense.world_size == experts.world_size == world
    kinds = {"tp": dense.get_ranks("tp"), "cp": dense.get_ranks("cp"), "dp_cp": dense.get_ranks("dp-cp"),
             "ep": experts.get_ranks("ep"), "expert_dp": experts.get_ranks("dp"), "etp": experts.get_ranks("tp")}
    out = {kind: fewest_sharing(groups, domain) for kind, groups in kinds.items()}
    out["pp_neighbours_share_domain"] = neighbours_share(dense.get_ranks("pp"), domain)
    return out


def main() -> None:
    sys.path.insert(0, os.environ["MEGATRON_LM"])
    results = {c[0]: {"layout": dict(zip(("world", "tp", "cp", "pp", "dp", "ep", "etp", "order", "domain"), c[1:])),
                      "megatron": case_groups(*c[1:])} for c in CASES}
    for cid, r in results.items():
        print(cid, r["megatron"])
    if "--write" in sys.argv[1:]:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
