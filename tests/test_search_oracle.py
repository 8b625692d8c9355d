"""Oracle: on random small instances CP-SAT's ranking equals the plain enumerator's.

The enumerator (planner/search/enumerator.py) calls step.estimate on every plan of the space, with no
tables, bounds or solver; CP-SAT works on the tabled candidates the bounds keep. For each instance the
K best layout groups' plans and objective values must agree (CP-SAT breaks ties in the exact float
order, so only float-precision ties may differ), both must
agree on "nothing fits", and every plan CP-SAT returns, re-scored with step.estimate, must match the
search's own numbers and fit in memory.
"""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from costmodel import types as cm
from costmodel.step import estimate
from planner import frameworks
from planner.errors import PlannerError
from planner.search import suggest
from planner.search.space import SearchSpec, build_space

GIB = 2**30
N_INSTANCES = 280
N_MOE = 60  # the last seeds draw mixtures of experts (random_moe_model)


def tiny_gpu(rng: random.Random) -> cm.Gpu:
    """A small-memory GPU (2.5-10 GiB: the cost model's 2 GiB overhead plus a little), so memory binds."""
    return cm.Gpu("tiny", rng.uniform(2.5, 10) * GIB,
                  {"fp32": 20e12, "tf32": 150e12, "bf16": 300e12, "fp16": 300e12, "fp8": 600e12},
                  rng.choice([1e12, 2e12, 3.35e12]), rng.choice([0.0, 150e9, 450e9]),
                  rng.choice(["ampere", "hopper"]))


def random_model(rng: random.Random) -> cm.Model:
    heads = rng.choice([1, 2, 4, 8])
    kv = rng.choice([d for d in (1, 2, 4, 8) if heads % d == 0])
    hidden = heads * rng.choice([16, 32, 64])
    ffn = hidden * rng.choice([2, 4]) if rng.random() < 0.5 else 0
    return cm.Model("rand", rng.randint(1, 8), hidden, heads, rng.choice([256, 1000, 4096]),
                    rng.choice([128, 512, 1024]), num_kv_heads=kv, ffn_hidden_size=ffn,
                    mlp=rng.choice(["gelu", "swiglu"]), tie_embeddings=rng.random() < 0.5,
                    dropout=rng.random() < 0.3)


def random_moe_model(rng: random.Random) -> cm.Model:
    """A small mixture of experts: the knobs only MoE plans have (EP overlap, dispatchers, MoE CUDA graphs, the
    quick-GEGLU prologue of biased experts, expert degrees) and, at a few thousand tokens, EP exchanges whose
    overlap can be slower than none (stage.ep_exposed_seconds)."""
    dense = random_model(rng)
    experts = rng.choice([2, 4, 8])
    moe = cm.Moe(experts, rng.choice([k for k in (1, 2) if k <= experts]), dense.hidden_size * rng.choice([1, 2]),
                 shared_ffn_hidden_size=rng.choice([0, dense.hidden_size]),
                 first_dense_layers=rng.choice([0, 0, 1]) if dense.num_layers > 1 else 0, layer_freq=rng.choice([1, 2]))
    mlp, bias = rng.choice([("swiglu", False), ("quick_geglu", True), ("quick_geglu", False)])
    return replace(dense, moe=moe, mlp=mlp, linear_bias=bias, dropout=False,
                   seq_length=rng.choice([128, 512, 1024, 8192]))


def random_spec(seed: int) -> tuple[SearchSpec, suggest.Options]:
    rng = random.Random(seed)
    gpus = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32])
    domain = rng.choice([1, 2, 4, 8])
    cluster = cm.Cluster("rand", tiny_gpu(rng), gpus, max(domain, 1), domain, 300e9, 25e9,
                         rdma=rng.random() < 0.8, usd_per_gpu_hour=rng.choice([0.0, 2.0]))
    fws = frameworks.NAMES if rng.random() < 0.6 else tuple(rng.sample(frameworks.NAMES, rng.randint(1, 2)))
    precisions = ("bf16",) if rng.random() < 0.7 else ("bf16", "fp8")
    grads = ("",) if rng.random() < 0.7 else ("bf16", "fp32")
    fixed: dict = {}
    if rng.random() < 0.2:
        key = rng.choice(["tp", "zero", "recompute", "sp"])
        fixed[key] = rng.choice({"tp": [1, 2], "zero": [0, 1, 3], "recompute": ["none", "full"],
                                 "sp": [True, False]}[key])
    gbs = rng.choice([1, 2, 4, 8, 12, 16, 32, 64])
    model = random_moe_model(rng) if seed >= N_INSTANCES - N_MOE else random_model(rng)
    spec = SearchSpec(model, cluster, gbs, fws, precisions, grads, fixed,
                      flash_attention=rng.random() < 0.8, overlap_dp_comm=rng.random() < 0.8,
                      overlap_pp_comm=rng.random() < 0.8)
    objective = "cost" if cluster.usd_per_gpu_hour and rng.random() < 0.3 else "time"
    return spec, suggest.Options(rng.randint(1, 5), objective, rng.choice([0.8, 0.9, 1.0]), "cpsat")


def outcome(spec: SearchSpec, opts: suggest.Options):
    try:
        return suggest.run(spec, opts)
    except PlannerError as err:
        return str(err)


def objective_of(spec: SearchSpec, opts: suggest.Options, step_seconds: float) -> float:
    from planner.search.objective import primary_value
    return primary_value(spec.cluster, step_seconds, opts.objective)


def test_instances_are_varied():
    """The generator reaches both outcomes and non-trivial spaces (else the oracle proves little)."""
    sizes, fails = [], 0
    for seed in range(N_INSTANCES):
        spec, opts = random_spec(seed)
        sizes.append(build_space(spec).size)
        fails += isinstance(outcome(spec, opts), str)
    assert sum(s >= 20 for s in sizes) >= N_INSTANCES // 3
    assert 10 <= fails <= N_INSTANCES // 2


def test_moe_instances_are_varied():
    """The mixture-of-experts seeds reach expert parallelism, the EP overlap (also under an interleaved
    pipeline), the quick-GEGLU prologue and both outcomes."""
    seen = {"ep": 0, "epo": 0, "interleaved epo": 0, "prologue": 0, "fails": 0}
    for seed in range(N_INSTANCES - N_MOE, N_INSTANCES):
        spec, opts = random_spec(seed)
        space = build_space(spec)
        pairs = [(lay, k) for lay, ks in space.knobs.items() for k in ks]
        seen["ep"] += any(lay.ep > 1 for lay, _ in pairs)
        seen["epo"] += any(k.epo for _, k in pairs)
        seen["interleaved epo"] += any(k.epo and lay.vpp > 1 for lay, k in pairs)
        seen["prologue"] += any(k.actp for _, k in pairs)
        seen["fails"] += isinstance(outcome(spec, opts), str)
    assert min(seen.values()) >= 1 and seen["ep"] >= N_MOE // 3 and seen["fails"] <= N_MOE // 2, seen


@pytest.mark.parametrize("seed", range(N_INSTANCES))
def test_cpsat_matches_enumerator(seed):
    spec, opts = random_spec(seed)
    got = outcome(spec, opts)
    want = outcome(spec, suggest.Options(opts.top_k, opts.objective, opts.max_memory_fraction, "enumerate"))
    if isinstance(want, str) or isinstance(got, str):
        assert isinstance(want, str) and isinstance(got, str), (got, want)
        assert want == got
        return
    a = [objective_of(spec, opts, r.step_seconds) for r in got.ranked]
    b = [objective_of(spec, opts, r.step_seconds) for r in want.ranked]
    assert len(a) == len(b)
    assert a == pytest.approx(b, rel=1e-12)
    # Same plans, unless two plans tie to float precision (then either is the optimum).
    same = [(r.layout, r.knobs) for r in got.ranked] == [(r.layout, r.knobs) for r in want.ranked]
    assert same or any(x == pytest.approx(y, rel=1e-12) for x, y in zip(a, a[1:], strict=False))
    assert len({r.layout.group for r in got.ranked}) == len(got.ranked)
    capacity = spec.cluster.gpu.memory_bytes * opts.max_memory_fraction
    for r in got.ranked:
        est = estimate(spec.model, spec.cluster, r.plan)
        assert est.step_time_seconds == pytest.approx(r.step_seconds, rel=1e-9)
        assert est.memory_per_gpu_bytes == pytest.approx(r.peak_memory_bytes, rel=1e-9)
        assert est.memory_per_gpu_bytes <= capacity
