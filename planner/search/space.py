"""The search space: every legal layout (tp, cp, pp, dp, ep, etp, vpp, micro-batch) and, per layout,
every knob combination (ZeRO stage, recompute, sequence parallel, precision, gradient dtype, ...) some
framework runs.

Legal = the cost model's structural rules (costmodel/rules.plan_violations), TP and expert TP inside
one NVLink domain (costmodel/topology), the framework modules (planner/frameworks: layout rules, knob
values, plan rules) and the user's --fix values. dp follows from tp*cp*pp*dp = GPUs; the global batch
is fixed, so the micro-batch size also fixes gradient accumulation (gas = gbs / (mbs*dp)). Layer
splits are the cost model's default (pipeline.default_chunk_layers: first/last chunk lighter when
the layers do not divide). Context parallelism is searched down to MIN_CP_TOKENS tokens per rank;
expert parallelism over the divisors of the expert count that the stage's ranks hold, with etp 1 or
tp (Megatron-core's folding allows others; --fix etp=N asks for one).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache, partial
from itertools import product
from operator import attrgetter
from typing import Iterator, Mapping

from costmodel import types as cm
from costmodel.lowp import LOW_PRECISIONS, WEIGHT_CASTS
from costmodel.pipeline import default_chunk_layers
from costmodel.rules import cluster_violations, cp_exchange_violations
from costmodel.rules import plan_violations
from costmodel.topology import cp_ranks_per_domain, domain_size, ranks_per_domain, tp_crosses_network
from planner.analysis.cpnote import MIN_CP_TOKENS
from planner.errors import PlannerError
from planner.frameworks import NAMES, REGISTRY, base

ZERO_STAGES = (0, 1, 2, 3)
MAX_SEARCH_VPP = 16


@dataclass(frozen=True, order=True)
class Layout:
    tp: int
    pp: int
    dp: int
    vpp: int
    mbs: int
    cp: int = 1
    ep: int = 1
    etp: int = 1

    @property
    def group(self) -> tuple[int, ...]:
        """What makes two plans 'distinct layouts' in the top K: (tp, cp, pp, dp, ep, etp)."""
        return plan_group(self)


def plan_group(plan) -> tuple[int, ...]:
    """Layout.group of a Layout or a cm.Plan (they name the degrees alike)."""
    return (plan.tp, plan.cp, plan.pp, plan.dp, plan.ep, plan.etp)


@dataclass(frozen=True, order=True)
class Knobs:
    zero: int
    recompute: str
    sp: bool
    precision: str
    grad: str  # gradient communication dtype; "" = the precision's default (Plan.grad_comm_dtype)
    # Low-precision weight casts (Plan.weight_casts), i.e. whose fp8 runs: "step" = Transformer Engine
    # (cached casts, the plan's fp8 recipe), "use" = torchao float8 (per-use casts, dynamic tensorwise scaling).
    casts: str = "step"
    reshard: bool = True  # ZeRO-3 weights freed after forward (Plan.zero3_reshard)
    tpo: bool = False  # TP collectives overlapped with the GEMMs beside them (Plan.tp_comm_overlap)
    cpc: str = "p2p"  # how CP ranks exchange K/V (Plan.cp_comm; only p2p when cp = 1)
    epo: bool = False  # expert-parallel all-to-alls overlapped with compute (Plan.ep_overlap; MoE only)
    pbuf: str = "freed"  # stage-boundary buffers the pipeline runtime keeps (Plan.pipeline_buffers; pp > 1)
    attn: str = "cudnn"  # the fused attention kernel the framework runs (Plan.attention_kernel)
    gsync: str = "buckets"  # when gradients are reduced (Plan.grad_sync; chunk_end: ZeRO-1, pp > 1; microbatch: ZeRO 0)
    spg: bool = False  # sequence parallel's inputs saved gathered (Plan.sp_gathered; only with SP)
    epd: str = "alltoall"  # MoE token dispatch (Plan.ep_dispatch: all-to-all, or DeepEP / HybridEP; MoE only)
    mcg: bool = False  # MoE router and dispatch in CUDA graphs (Plan.moe_cuda_graphs; MoE only)
    dpo: bool = True  # DP/ZeRO gradient sync overlapped with the backward (Plan.overlap_dp_comm)
    offl: int = 0  # layers per stage whose activations go to host memory (Plan.offload_layers; offload_counts)
    # under full recompute, the first layers of each model chunk recomputed, 0 = all (Plan.recompute_layers;
    # recompute_counts)
    rcl: int = 0
    tpa: bool = True  # the backward's TP collectives beside the GEMMs (Plan.tp_async_grad; one per framework)
    proj: str = "fused"  # the dense projections fused or separate GEMMs (Plan.projections; one per framework)
    rof: bool = True  # RoPE as one fused kernel (Plan.rope_fusion; one per framework and model)
    actp: bool = False  # the experts' activation prologue (Plan.moe_act_prologue; one per framework and model)
    esd: bool = False  # expert GEMMs' token counts on the device (Plan.expert_sizes_on_device; one per framework)
    # how the loss runs (Plan.cross_entropy; one per framework); the default, the fastest, is what the bounds take
    xent: str = "fused"
    # the runtime's gradient reduce bucket, elements (Plan.grad_bucket_elements; one per framework and ZeRO stage)
    gbuf: int = 0

    # The memory walk asks for these tens of thousands of times per search (planner/search/bounds.py);
    # cached on the instance (a frozen dataclass keeps its __dict__ writable for cached_property), they
    # spare hashing all the fields each time. Neither enters equality, ordering or the hash.
    @cached_property
    def states(self) -> tuple:
        """The knobs a stage's model-state bytes depend on (tables.TableContext.states_bytes): with reduce buckets
        (gbuf) the DP overlap too, which keeps a second one (dataparallel.staging_bucket_bytes)."""
        return (self.zero, self.precision, self.grad, self.casts, self.reshard, self.gsync, self.gbuf,
                self.dpo and self.gbuf > 0)

    @cached_property
    def overlap_bucket(self) -> bool:
        """Whether the DP overlap holds a reduce bucket more than the sync after the backward: DeepSpeed's ZeRO-1/2
        (dataparallel.staging_bucket_bytes), so the overlap is not the smaller of the two there."""
        return self.gbuf > 0 and self.zero in (1, 2)

    @cached_property
    def memory(self) -> tuple:
        """The knobs a plan's peak memory depends on (tables.LayoutTables.peak_memory): the model
        states', the activations' and the CP exchange's, and the EP overlap (its combined 1F1B warms up one
        chunk more under an interleaved pipeline, memory.inflight_microbatches), and the experts' activation
        prologue (what its clamps keep), and the loss (what an eager one keeps); not the TP overlap or the
        attention kernel."""
        return (*self.states, self.recompute, self.rcl, self.sp, self.cpc, self.pbuf, self.spg, self.offl, self.proj,
                self.epo, self.actp, self.xent)

    @cached_property
    def values(self) -> tuple:
        """knob_values of the combination (its fields as a tuple)."""
        return knob_values(self)

    @cached_property
    def block_family(self) -> tuple:
        """The combination's values with every layer's recompute (Knobs.rcl 0): what a block recompute count
        (bounds.with_block_counts) is a variant of."""
        return knob_variant(self.values, rcl=0)

    @cached_property
    def unrecomputed(self) -> tuple:
        """The combination's values with no recompute at all (recompute none, Knobs.rcl 0)."""
        return knob_variant(self.values, recompute="none", rcl=0)


# Knobs field -> the cm.Plan field it sets: plan_for and knob_combinations both write a plan's knobs
# through knob_plan_fields, so a new knob is one line here (tests/test_search_space.py checks it is).
PLAN_FIELDS = {"zero": "zero_stage", "recompute": "recompute", "sp": "sequence_parallel", "precision": "precision",
               "grad": "grad_dtype", "casts": "weight_casts", "reshard": "zero3_reshard", "tpo": "tp_comm_overlap",
               "cpc": "cp_comm", "epo": "ep_overlap", "pbuf": "pipeline_buffers", "attn": "attention_kernel",
               "gsync": "grad_sync", "spg": "sp_gathered", "epd": "ep_dispatch", "mcg": "moe_cuda_graphs",
               "dpo": "overlap_dp_comm", "offl": "offload_layers", "rcl": "recompute_layers", "tpa": "tp_async_grad",
               "proj": "projections", "rof": "rope_fusion", "actp": "moe_act_prologue", "xent": "cross_entropy",
               "gbuf": "grad_bucket_elements", "esd": "expert_sizes_on_device"}


def fixed_plan_fields(spec: "SearchSpec") -> dict[str, object]:
    """The user's --fix values as cm.Plan fields (Layout's mbs is micro_batch_size, Knobs' by PLAN_FIELDS):
    what a lever offered beside the search's plans must keep."""
    names = {**PLAN_FIELDS, "mbs": "micro_batch_size"}
    out = {names.get(key, key): value for key, value in spec.fixed.items()}
    return out if spec.overlap_dp_comm else {**out, "overlap_dp_comm": False}  # --no-overlap


# The values each knob takes (booleans: False/True), for --fix (planner/commands/suggest.py); zero, offl and
# rcl are numbers.
KNOB_CHOICES = {"recompute": cm.RECOMPUTE_MODES, "sp": (False, True), "precision": cm.PRECISIONS,
                "grad": cm.GRAD_DTYPES, "casts": WEIGHT_CASTS, "reshard": (False, True), "tpo": (False, True),
                "cpc": cm.CP_COMMS, "epo": (False, True), "pbuf": cm.PIPELINE_BUFFERS, "attn": cm.ATTENTION_KERNELS,
                "gsync": cm.GRAD_SYNCS, "spg": (False, True), "epd": ("alltoall", "deepep"), "mcg": (False, True),
                "dpo": (False, True), "tpa": (False, True), "proj": cm.PROJECTIONS, "rof": (False, True),
                "actp": (False, True), "xent": cm.CROSS_ENTROPY, "esd": (False, True)}


@lru_cache(maxsize=4096)
def knob_plan_fields(k: Knobs) -> dict[str, object]:
    """The cm.Plan fields a knob combination sets, with the fp8 scaling its weight casts imply: per-use
    casts are torchao's float8 (rowwise scaling), cached casts Transformer Engine's (delayed scaling).
    Cached (a search asks for the same few hundred combinations tens of thousands of times): callers
    unpack it and never change it."""
    out = {plan_field: getattr(k, name) for name, plan_field in PLAN_FIELDS.items()}
    out["fp8_recipe"] = fp8_recipe_for(k.casts)
    return out


def fp8_recipe_for(casts: str) -> str:
    """The fp8 scaling weight casts imply (knob_plan_fields)."""
    return "rowwise" if casts == "use" else "delayed"


# A Knobs as the tuple of its field values: the dominance checks below compare combinations as tuples,
# which spares building a Knobs per variant (dataclasses.replace, about 15 us each).
_KNOB_FIELDS = tuple(f.name for f in fields(Knobs))
_KNOB_INDEX = {name: i for i, name in enumerate(_KNOB_FIELDS)}
knob_values = attrgetter(*_KNOB_FIELDS)


def knob_variant(values: tuple, **changes) -> tuple:
    """knob_values(replace(k, **changes)) from knob_values(k)."""
    out = list(values)
    for name, value in changes.items():
        out[_KNOB_INDEX[name]] = value
    return tuple(out)


@dataclass(frozen=True)
class SearchSpec:
    """What to search: the job (model, cluster with its GPU count, global batch) and the user's limits."""

    model: cm.Model
    cluster: cm.Cluster
    global_batch_size: int
    frameworks: tuple[str, ...] = NAMES
    precisions: tuple[str, ...] = ("bf16",)
    grad_dtypes: tuple[str, ...] = ("",)
    fixed: Mapping[str, object] = field(default_factory=dict)  # Layout/Knobs field name -> value
    flash_attention: bool = True
    overlap_dp_comm: bool = True
    overlap_pp_comm: bool = True
    # Plan fields set on every plan, numerics the search never picks (planflags.NUMERICS: bf16 Adam states,
    # parameters gathered in the low precision), the user's choice as in estimate.
    numerics: Mapping[str, object] = field(default_factory=dict)
    # Full recompute of the first N layers of each model chunk searched too (recompute_counts): off by default, as
    # it lengthens the search of a model that needs recompute by 1.3-1.5x and changed no best plan measured
    # (benchmarks/bench_suggest.py --block-recompute; README, "Block recompute").
    block_recompute: bool = False

    def __post_init__(self):
        check_search_spec(self)


def _choices(name: str, given, allowed) -> list[str]:
    """A non-empty tuple of known names (a bare string would be read letter by letter)."""
    if not isinstance(given, tuple) or not given:
        return [f"{name} must be a non-empty tuple (got {given!r})"]
    unknown = [g for g in given if g not in allowed]
    return [f"{name}: unknown {', '.join(map(repr, unknown))} (known: {', '.join(a or repr(a) for a in allowed)})"] \
        if unknown else []


def check_search_spec(spec: SearchSpec) -> None:
    """One PlannerError naming what a SearchSpec gives that the search cannot take: the model and cluster as
    plans.check_inputs, the global batch, and names of frameworks, precisions, gradient dtypes, fixed fields and
    numerics it does not know. `planner suggest` checks its flags first, with their names; this is what a spec
    built in Python (or by replace()) meets, run on every construction (well under a millisecond)."""
    from planner.inputs import limits as L
    from planner.inputs.planflags import NUMERICS
    from planner.inputs.plans import check_inputs

    check_inputs(spec.model, spec.cluster)
    gbs = spec.global_batch_size
    broken = [] if type(gbs) is int and 1 <= gbs <= L.MAX_BATCH else [
        f"global_batch_size must be a whole number from 1 to {L.MAX_BATCH} (got {gbs!r})"]
    broken += _choices("frameworks", spec.frameworks, NAMES) + _choices("precisions", spec.precisions, cm.PRECISIONS)
    broken += _choices("grad_dtypes", spec.grad_dtypes, ("",) + tuple(cm.GRAD_DTYPES))
    known = {f.name for f in fields(Layout)} | set(_KNOB_INDEX)
    broken += [f"fixed: unknown field {k!r}" for k in spec.fixed if k not in known]
    broken += [f"numerics: unknown field {k!r} (known: {', '.join(NUMERICS)})" for k in spec.numerics
               if k not in NUMERICS]
    broken += [f"{k} must be true or false" for k in ("flash_attention", "overlap_dp_comm", "overlap_pp_comm",
                                                       "block_recompute")
               if not isinstance(getattr(spec, k), bool)]
    if broken:
        raise PlannerError("; ".join(broken))


@dataclass(frozen=True)
class Space:
    spec: SearchSpec
    knobs: dict[Layout, tuple[Knobs, ...]]  # every legal layout -> its legal knob combinations
    rejected: Counter  # reason -> how many (tp, pp) splits it excluded (for the "nothing is legal" line)

    @cached_property
    def sizes_blocks_late(self) -> bool:
        """Whether block recompute's counts (Knobs.rcl) are searched beside every layer's recompute (SearchSpec.
        block_recompute), so that the search sizes them only where that fits (bounds.with_block_counts); a
        count pinned with --fix has no such family and is sized like any knob."""
        return "rcl" not in self.spec.fixed and recompute_counts(self.spec) != (0,)

    @property
    def layouts(self) -> list[Layout]:
        return list(self.knobs)

    def all_knobs(self) -> set[Knobs]:
        """Every knob combination some layout offers (layouts share their tuples: each is read once)."""
        return {k for ks in {id(ks): ks for ks in self.knobs.values()}.values() for k in ks}

    @property
    def size(self) -> int:
        """Number of plans in the space (layouts x their knob combinations)."""
        return sum(len(k) for k in self.knobs.values())


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """Divisors of n in increasing order, by trial division up to sqrt(n) (n is bounded by the input
    limits, so at most a few thousand steps)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return tuple(small + large[::-1])


def plan_for(spec: SearchSpec, lay: Layout, knobs: Knobs | None = None) -> cm.Plan:
    """The cost-model plan of a layout and knob combination (default knobs: ZeRO 0, no recompute)."""
    k = knobs or Knobs(0, "none", False, probe_precision(spec), "", dpo=spec.overlap_dp_comm)
    fields = {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "vpp": lay.vpp, "micro_batch_size": lay.mbs, "cp": lay.cp,
              "ep": lay.ep, "etp": lay.etp, "global_batch_size": spec.global_batch_size,
              "flash_attention": spec.flash_attention, "overlap_pp_comm": spec.overlap_pp_comm, **spec.numerics}
    fields.update(knob_plan_fields(k))
    return _plan_with(fields)


def probe_precision(spec: SearchSpec) -> str:
    """The precision a layout's probe plan takes: the first asked for, or under --lowp-param-gather the first
    low one (a 16-bit probe would break "low-precision parameters need a low precision" on every split)."""
    if spec.numerics.get("lowp_param_gather"):
        return next((p for p in spec.precisions if p in LOW_PRECISIONS), spec.precisions[0])
    return spec.precisions[0]


_DEFAULT_PLAN = cm.Plan()
assert not hasattr(cm.Plan, "__post_init__"), "_plan_with skips cm.Plan.__init__: it must only set fields"


def _plan_with(fields: dict[str, object]) -> cm.Plan:
    """cm.Plan(**fields), without the generated __init__'s 42 frozen-field assignments (a large search
    builds tens of thousands of plans: about 2.7 us each this way against 6.6 us): the default plan's
    fields with `fields` over them. tests/test_search_space.py checks it equals cm.Plan(**fields)."""
    return plan_over(_DEFAULT_PLAN, fields)


plan_over = cm.plan_with  # the search's hot loops replace plan fields this way (a MoE space builds some 40,000 probes)


def _fixed_ok(spec: SearchSpec, obj: object) -> bool:
    return all(getattr(obj, name) == value for name, value in spec.fixed.items() if hasattr(obj, name))


def split_violations(spec: SearchSpec, tp: int, pp: int, cp: int = 1, ep: int = 1, etp: int = 1) -> list[str]:
    """Why the (tp, cp, pp, ep, etp) split cannot run at all (checked on vpp 1, micro-batch 1), empty if it can."""
    n = spec.cluster.num_gpus
    lay = Layout(tp, pp, n // (tp * cp * pp), 1, 1, cp, ep, etp)
    plan = plan_for(spec, lay)
    broken = plan_violations(spec.model, spec.cluster, plan)
    if tp_crosses_network(plan, spec.cluster):
        broken.append(f"tp ({tp}) must stay inside one NVLink domain ({domain_size(spec.cluster)} GPUs)")
    if etp > 1 and ranks_per_domain(etp, 1, spec.cluster) < etp:
        broken.append(f"etp ({etp}) must stay inside one NVLink domain ({domain_size(spec.cluster)} GPUs)")
    return broken


def cp_choices(spec: SearchSpec, ranks: int) -> list[int]:
    """Context-parallel sizes for `ranks` GPUs per tensor-parallel group: 1, and divisors of `ranks`
    that split each sequence into 2 x cp equal chunks of at least MIN_CP_TOKENS / 2 tokens; or the
    --fix value."""
    fixed = spec.fixed.get("cp")
    if isinstance(fixed, int):
        return [fixed] if ranks % fixed == 0 else []
    s = spec.model.seq_length
    return [c for c in divisors(ranks) if c == 1 or (s % (2 * c) == 0 and s // c >= MIN_CP_TOKENS)]


def expert_choices(spec: SearchSpec, tp: int, cp: int, dp: int) -> list[tuple[int, int]]:
    """(ep, etp) for a stage of tp x cp x dp ranks: (1, 1) for a dense model; for an MoE model every
    ep dividing the expert count with ep x etp dividing the stage's ranks, etp 1 or tp; or the --fix
    values."""
    moe = spec.model.moe
    if moe is None:
        return [(1, 1)]
    ranks = tp * cp * dp
    etps = sorted({1, tp})
    out = [(e, t) for t in etps for e in divisors(moe.num_experts) if ranks % (e * t) == 0]
    return [(e, t) for e, t in out if spec.fixed.get("ep", e) == e and spec.fixed.get("etp", t) == t]


def vpp_choices(spec: SearchSpec, pp: int) -> list[int]:
    """Virtual stages per pipeline rank: 1 to MAX_SEARCH_VPP (and at most one layer per chunk), or
    the --fix value. Past 16 chunks per rank the bubble is already under 1/16 of the 1F1B one, while
    every chunk adds its p2p exchanges; published schedules use 2-8 (Llama 3 405B: 8)."""
    if pp == 1:
        return [1]
    most = spec.model.num_layers // pp
    fixed = spec.fixed.get("vpp")
    if isinstance(fixed, int):
        return [fixed] if fixed <= most else []
    return [v for v in range(1, min(most, MAX_SEARCH_VPP) + 1) if v == 1 or alike_middle(spec.model.num_layers, pp, v)]


def alike_middle(num_layers: int, pp: int, vpp: int) -> bool:
    """Whether the default interleaved split (pipeline.default_chunk_layers) has its middle chunks
    alike, the first and last at most as large: even, or the shape NVIDIA's recipes write (Llama 3
    405B's 1, 2 x 62, 1; DeepSeek-V3's Et*4|(t*4|)*14tmL). The search tries only these; --fix vpp
    reaches the others."""
    chunks = default_chunk_layers(num_layers, pp, vpp)
    middle = set(chunks[1:-1]) or set(chunks)
    return len(middle) == 1 and chunks[0] <= max(middle) and chunks[-1] <= max(middle)


def vpp_frameworks(spec: SearchSpec, tp: int, pp: int, cp: int, ep: int, etp: int) -> dict[int, tuple[str, ...]]:
    """Per vpp choice of a (tp, cp, pp, ep, etp) split, the selected frameworks whose layout rules
    (those that do not read the micro-batches) it passes."""
    dp = spec.cluster.num_gpus // (tp * cp * pp)
    out = {}
    for vpp in vpp_choices(spec, pp):
        probe = plan_for(spec, Layout(tp, pp, dp, vpp, 1, cp, ep, etp))
        out[vpp] = tuple(f for f in spec.frameworks if base.split_violation(REGISTRY[f], spec.model, probe) is None)
    return out


def candidate_layouts(spec: SearchSpec, tp: int, pp: int, cp: int = 1, ep: int = 1, etp: int = 1
                      ) -> Iterator[tuple[Layout, tuple[str, ...]]]:
    """Every (vpp, micro-batch) layout of a legal (tp, cp, pp, ep, etp) split with the frameworks
    (among those selected) that run it: its split passes their layout rules and, pipelined, its
    micro-batch count their pipeline schedules' rules (interleaving_rules)."""
    dp = spec.cluster.num_gpus // (tp * cp * pp)
    for vpp, fws in vpp_frameworks(spec, tp, pp, cp, ep, etp).items():
        if not fws:
            continue
        probe = plan_for(spec, Layout(tp, pp, dp, vpp, 1, cp, ep, etp)) if pp > 1 else None
        for mbs in divisors(spec.global_batch_size // dp):
            lay = Layout(tp, pp, dp, vpp, mbs, cp, ep, etp)
            if not _fixed_ok(spec, lay):
                continue
            if probe is None:
                yield lay, fws
            else:  # plan_for(spec, lay): the probe with this micro-batch
                plan = plan_over(probe, {"micro_batch_size": mbs})
                yield lay, tuple(f for f in fws if base.interleaving_violation(REGISTRY[f], spec.model, plan) is None)


def gpu_runs(spec: SearchSpec, precision: str) -> bool:
    """A low-precision format needs tensor cores for it (costmodel.rules); every GPU runs the others."""
    probe = cm.Plan(precision=precision)
    return not cluster_violations(spec.cluster, probe)


def legal_cp_comms(spec: SearchSpec, tp: int, cp: int) -> tuple[str, ...]:
    """The CP exchanges the (tp, cp) split allows: Ulysses (a2a) splits each TP rank's KV heads over
    cp, and a2a+p2p over the CP ranks of one NVLink domain (costmodel/rules.py _context_rules and
    cluster_violations); they read tp and cp themselves, not only cp > 1, so the knob probe of a class
    of splits cannot stand for them. a2a+p2p is left out where its a2a group is one rank or all cp of
    them: it is then the ring or Ulysses by another name (Transformer Engine runs it so, and the cost
    model prices it so), and would only relabel them as a setting no published run used; --fix
    cp_comm=a2a+p2p keeps it."""
    if cp == 1:
        return ("p2p",)
    plan = plan_for(spec, Layout(tp, 1, spec.cluster.num_gpus // (tp * cp), 1, 1, cp))
    inner = cp_ranks_per_domain(plan, spec.cluster)
    return tuple(c for c in cm.CP_COMMS
                 if not (c == "a2a+p2p" and inner in (1, cp) and spec.fixed.get("cpc") != c)
                 and not cp_exchange_violations(spec.model, spec.cluster, plan_over(plan, {"cp_comm": c})))


def machine_refusals(spec: SearchSpec, tp: int, pp: int, cp: int = 1, ep: int = 1, etp: int = 1) -> frozenset:
    """(framework, rule index, knob values) that a selected framework's machine rules refuse on this
    (tp, cp, pp, ep, etp) split of the cluster (base.MachineRule: each reads the split's degrees, the
    machine and its own knobs only, so every value combination of those knobs is checked once here);
    knob_combinations drops the combinations they name. A plan field the search does not set (not in
    PLAN_FIELDS: an MXFP8 dispatch, the whole-iteration graph) is checked at its default only."""
    machine = base.Machine.of(spec.cluster)
    split = plan_for(spec, Layout(tp, pp, spec.cluster.num_gpus // (tp * cp * pp), 1, 1, cp, ep, etp))
    searched = set(PLAN_FIELDS.values())
    out = set()
    for name in spec.frameworks:
        fw = REGISTRY[name]
        ks = fw.knobs(tp > 1, pp > 1)
        for i, rule in enumerate(fw.machine_rules):
            options = (getattr(ks, k).values if k in searched else (getattr(split, k),) for k in rule.knobs)
            for values in product(*options):
                if rule.check(spec.model, machine, plan_over(split, dict(zip(rule.knobs, values)))):
                    out.add((name, i, values))
    return frozenset(out)


def knob_combinations(spec: SearchSpec, fws: tuple[str, ...], tp: int, pp: int, cp: int = 1,
                      vpp: int = 1, ep: int = 1, etp: int = 1, ep_local: bool = False,
                      cp_comms: tuple[str, ...] = cm.CP_COMMS, refused: frozenset = frozenset(),
                      runs: dict | None = None) -> tuple[Knobs, ...]:
    """Union over `fws` of the knob combinations each runs (its knob values and plan rules), within
    the user's options and fixes. Knob values and plan rules read the layout only through tp > 1,
    pp > 1, cp > 1, vpp > 1, ep > 1 and etp > 1 (planner/frameworks/base.py), so one probe plan
    of this (tp, pp, cp, vpp, ep, etp) stands for all with the same answers. `ep_local`: the
    expert-parallel group lies in one NVLink domain, where DeepEP's dispatch moves what the
    all-to-all moves (moe.deduplicated_dispatch_seconds: no remote domain), so the all-to-all
    combinations are dropped when DeepEP with the MoE CUDA graphs (no host synchronisation) is offered,
    and DeepEP without them when the all-to-all is (the same time; the plainer dispatcher is kept).
    The user's fixes filter the combinations before that rule (a dispatcher fixed to the one it would drop
    once left the split with none). `cp_comms`: the CP exchanges the split allows (legal_cp_comms); `refused`:
    what the frameworks' machine rules refuse on the split (machine_refusals); `runs`: framework_knobs'
    answers, shared by the calls of one search (splits that differ only in their machine refusals, CP exchanges
    or frameworks ask the same questions: each combination is judged alone, so one answer over every exchange
    serves all, filtered by `cp_comms`), and by (framework, knobs) their refusal_keys."""
    out: set[Knobs] = set()
    runs = {} if runs is None else runs
    probe = plan_for(spec, Layout(tp, pp, spec.cluster.num_gpus // (tp * cp * pp), vpp, 1, cp, ep, etp))
    for name in fws:
        key = (name, tp > 1, pp > 1, cp > 1, vpp > 1, ep > 1, etp > 1)
        if key not in runs:
            runs[key] = framework_knobs(spec, name, probe)
        for k, dpos, counts in runs[key]:
            if cp > 1 and k.cpc not in cp_comms:
                continue

            def offer(dpo: bool) -> None:  # the knobs and their block counts at this DP overlap value
                out.add(k if dpo == k.dpo else replace(k, dpo=dpo))
                out.update(counts if dpo == k.dpo else (replace(c, dpo=dpo) for c in counts))

            # The first DP overlap value that passes, and where the overlap holds a second reduce bucket
            # (Knobs.overlap_bucket) every one: the sync after the backward may fit where it does not.
            if not refused:  # no machine rule refuses anything on the split
                for dpo in dpos if k.overlap_bucket else dpos[:1]:
                    offer(dpo)
                continue
            if (name, k) not in runs:
                runs[name, k] = refusal_keys(name, plan_over(probe, knob_plan_fields(k)), dpos)
            # of the rules only machine rules read the DP overlap (base.py), and none reads the block recompute
            # count (tests/test_block_recompute.py): the counts go where their knobs go
            for dpo, keys in runs[name, k]:
                if not any(key in refused for key in keys):
                    offer(dpo)
                    if not k.overlap_bucket:
                        break
    out = {k for k in out if _fixed_ok(spec, k)}  # before the dispatchers' rule: a fixed one must not go for another
    if ep_local:
        values = {k: knob_values(k) for k in out}
        offered = set(values.values())
        out = {k for k, v in values.items()
               if not (k.epd == "alltoall" and knob_variant(v, epd="deepep", mcg=True) in offered
                       or k.epd == "deepep" and not k.mcg and knob_variant(v, epd="alltoall") in offered)}
    return tuple(sorted(undominated(out)))


def own_knobs(fw: base.Framework, ks: base.Knobs, model: cm.Model, zero: int, sp: bool, tp: int,
              machine: base.Machine) -> dict:
    """The Knobs fields a framework does not choose between, one value each: when it reduces gradients (per ZeRO
    stage: chunk_end is ZeRO-1 under a pipeline, microbatch ZeRO 0), how sequence parallel saves its inputs,
    whether the TP input-gradient reduction runs beside the GEMMs (moot without TP), its projections, RoPE
    fusion and expert activation prologue (per model), its loss (its fastest) and its runtime's gradient reduce
    bucket (per ZeRO stage). The search's combinations
    (framework_knobs) and its refusal probes (knob_refusal) both take them."""
    return {"gsync": base.grad_sync_for(ks, zero), "spg": ks.sp_gathered.values[0] if sp else False,
            "tpa": ks.tp_async_grad.values[0] if tp > 1 else True, "proj": ks.projections.values[0],
            "rof": fw.rope_fusion(model), "actp": fw.act_prologue(model), "xent": ks.cross_entropy.values[0],
            "gbuf": fw.grad_bucket_elements(model, zero),
            "esd": model.moe is not None and fw.expert_sizes_on_device(machine)}


def framework_knobs(spec: SearchSpec, name: str, probe: cm.Plan) -> list:
    """The knob combinations framework `name` runs on the probe plan's split, before its machine rules and
    with every CP exchange it offers (a split keeps those legal_cp_comms allows on it): (knobs with the first
    DP overlap value allowed, the DP overlap values in the order to try, its block recompute counts: the knobs
    with each Knobs.rcl it runs, which the machine rules judge as the knobs themselves, knob_combinations)."""
    fw = REGISTRY[name]
    tp, pp, cp = probe.tp, probe.pp, probe.cp
    ks, machine = fw.knobs(tp > 1, pp > 1), base.Machine.of(spec.cluster)
    if base.numerics_violations(fw, probe):  # the user's numerics (SearchSpec.numerics), same on every plan
        return []
    found, rules = [], ProbeRules(spec, fw)
    kernels = fw.attention_kernels(spec.model, machine, ks).values
    for zero, rc, sp, prec in product(ks.zero_stage.values, ks.recompute.values, ks.sequence_parallel.values,
                                      ks.precision.values):
        if (sp and tp == 1) or prec not in spec.precisions or not gpu_runs(spec, prec):
            continue
        casts = ks.weight_casts.values if prec in LOW_PRECISIONS else ("step",)
        reshards = ks.zero3_reshard.values if zero == 3 else (True,)
        overlaps = ks.tp_comm_overlap.values if sp else (False,)  # TP overlap splits the SP collectives
        cpcs = ks.cp_comm.values if cp > 1 else ("p2p",)
        moe = spec.model.moe is not None
        epos = ks.ep_overlap.values if moe else (False,)
        epds = ks.ep_dispatch.values if moe else ("alltoall",)
        mcgs = ks.moe_cuda_graphs.values if moe else (False,)
        pbufs = ks.pipeline_buffers.values if pp > 1 else ("freed",)
        own = own_knobs(fw, ks, spec.model, zero, sp, tp, machine)
        # the DP overlap where it runs, else the sync after the backward: the first value that passes
        dpos = tuple(v for v in sorted(ks.overlap_dp_comm.values, reverse=True)
                     if (spec.overlap_dp_comm or not v) and spec.fixed.get("dpo", v) == v)  # --no-overlap, --fix
        if not dpos:
            continue
        # grad "": the precision's own; those whose wire dtype the framework reduces in (Plan.grad_comm_dtype)
        allowed = ks.grad_dtype(prec).values
        grads = [g for g in spec.grad_dtypes
                 if plan_over(probe, {"precision": prec, "grad_dtype": g}).grad_comm_dtype in allowed]
        # offload counts other than 0: probed once, on a combination that runs without (base.py, plan rules)
        offls = tuple(n for n in offload_counts(spec) if n) if True in ks.activation_offload.values else ()
        # block recompute's layer counts, under full recompute where the framework runs it: probed the same way
        rcls = tuple(n for n in recompute_counts(spec) if n) if rc == "full" and True in ks.block_recompute.values \
            else ()
        outer = dict(zip(OUTER_PLAN_FIELDS, (zero, rc, sp, prec, own["gsync"], own["spg"], dpos[0], 0, 0, own["tpa"],
                                              own["proj"], own["rof"], own["actp"], own["xent"], own["gbuf"],
                                              own["esd"])))
        for inner in product(grads, casts, reshards, overlaps, cpcs, epos, pbufs, kernels, epds, mcgs):
            fields = dict(zip(INNER_PLAN_FIELDS, inner))
            fields.update(outer, fp8_recipe=fp8_recipe_for(fields["weight_casts"]))
            plan = plan_over(probe, fields)
            if rules.refuse(plan):  # most are refused: no Knobs built for them
                continue
            grad, cast, reshard, tpo, cpc, epo, pbuf, attn, epd, mcg = inner
            k = Knobs(zero, rc, sp, prec, grad, cast, reshard, tpo, cpc, epo, pbuf, attn, epd=epd, mcg=mcg,
                      dpo=dpos[0], **own)
            counts = tuple(replace(k, rcl=n) for n in rcls) \
                if rcls and not rules.refuse(plan_over(plan, {"recompute_layers": rcls[0]})) else ()
            found.append((k, dpos, counts))
            if offls and not rules.refuse(plan_over(plan, {"offload_layers": offls[0]})):
                found += [(replace(k, offl=n), dpos, ()) for n in offls]
    return found


# The cm.Plan fields framework_knobs sets per combination of its outer loop and of its inner loop, in
# their orders: between them every knob (tests/test_search_space.py).
OUTER_PLAN_FIELDS = tuple(PLAN_FIELDS[name] for name in ("zero", "recompute", "sp", "precision", "gsync", "spg", "dpo",
                                                         "offl", "rcl", "tpa", "proj", "rof", "actp", "xent",
                                                         "gbuf", "esd"))
INNER_PLAN_FIELDS = tuple(PLAN_FIELDS[name] for name in
                          ("grad", "casts", "reshard", "tpo", "cpc", "epo", "pbuf", "attn", "epd", "mcg"))


class ProbeRules:
    """Whether a framework runs a probe plan with its knobs, as far as its plan rules and the cost model's
    cluster rules go (framework_knobs has checked the gradient dtype; its machine rules are the split's
    refusals, machine_refusals). For the many probes of one framework_knobs call it asks the rule that
    refused last first: whether some rule refuses does not depend on the order, and one split's probes
    fall to the same few rules (Megatron-LM's MoE rules refuse most of a MoE space: sequence parallelism
    under TP, the EP overlap's schedule), so most are refused by the first rule asked, not the tenth."""

    def __init__(self, spec: SearchSpec, fw: base.Framework) -> None:
        self.model = spec.model
        self.rules = [*base.all_plan_rules(fw), partial(_cluster_rule, spec.cluster)]

    def refuse(self, plan: cm.Plan) -> bool:
        for i, rule in enumerate(self.rules):
            if rule(self.model, plan):
                if i:
                    self.rules.insert(0, self.rules.pop(i))
                return True
        return False


def _cluster_rule(cluster: cm.Cluster, model: cm.Model, plan: cm.Plan) -> list[str]:
    """The cost model's cluster rules but the CP exchange's KV-head split, which reads the split's own tp and cp
    (legal_cp_comms checks it per split)."""
    return cluster_violations(cluster, plan)


def offload_counts(spec: SearchSpec) -> tuple[int, ...]:
    """Layers offloaded to host (Plan.offload_layers) the search tries where a framework offloads: none and
    base.offload_layer_counts (a quarter and half of the layers), or the --fix value. The frameworks offload
    only without pipeline parallelism, so the stage holds every layer; the rules refuse the counts a plan
    cannot run (no recompute: frameworks/megatron.py cpu_offloading; fewer than a stage's layers:
    costmodel/rules.py _offload_rules)."""
    fixed = spec.fixed.get("offl")
    if isinstance(fixed, int):
        return (fixed,)
    return (0, *base.offload_layer_counts(spec.model.num_layers))


def recompute_counts(spec: SearchSpec) -> tuple[int, ...]:
    """Layers per model chunk block recompute takes (Plan.recompute_layers) where the search tries it: 0 (every
    layer) and, under SearchSpec.block_recompute, the powers of two below the model's layers; or the --fix
    value. A layout keeps those below its own largest chunk (build_space, layout_knobs: more is every layer,
    which costmodel/rules.py refuses as such), and of the ones that fit the search times only the fewest
    (bounds.fewest_fitting_blocks: fewer replayed layers are never slower)."""
    fixed = spec.fixed.get("rcl")
    if isinstance(fixed, int):
        return (fixed,)
    if not spec.block_recompute:
        return (0,)
    return (0, *base.recompute_layer_counts(spec.model.num_layers))


def refusal_keys(name: str, plan: cm.Plan, dpos: tuple[bool, ...]) -> tuple:
    """Per DP overlap value, the (framework, rule index, knob values) that machine_refusals records if
    framework `name`'s machine rules refuse `plan` with it. The values are of the fields each rule names
    (base.MachineRule.knobs): the plan's knobs and the search's fixed settings, not its split, so one
    knob combination has the same keys on every split of a search (knob_combinations keeps them)."""
    rules = REGISTRY[name].machine_rules
    return tuple((dpo, tuple((name, i, tuple(dpo if f == "overlap_dp_comm" else getattr(plan, f) for f in rule.knobs))
                             for i, rule in enumerate(rules)))
                 for dpo in dpos)


def undominated(knobs) -> set[Knobs]:
    """Drops a combination with TP overlap off when the same one with it on is offered: the overlapped
    collective never costs more (costmodel/overlap.py: decomposed_exposed_seconds and
    overlapped_cost_seconds are at most the transfer), only a pipeline bubble's share of the saving
    leaves the DP overlap window, and memory does not depend on it; likewise the
    DP/ZeRO sync after the backward when another framework offers the overlapped one
    (step.dp_exposed_with_contention is at most the transfer), but not where the overlap holds a second reduce
    bucket (Knobs.overlap_bucket); one that keeps pipeline buffers per
    micro-batch when the same one that frees them is offered (same time, less memory);
    one without the MoE CUDA graphs when the same one with them is offered (they only take away the
    per-layer host synchronisation, stage.host_synced_dispatch; no memory);
    and FlashAttention-2 when cuDNN's attention is offered (same memory; never slower: the two share a
    fraction of peak on every generation but Hopper, where FlashAttention-2 runs at the measured
    flash2_over_cudnn_hopper <= 1 of cuDNN's, tests/test_attention_kernel.py)
    (tests/test_search_tables.py checks the step and the memory on random plans). Not the EP overlap: its
    exchanges, each launched while the other micro-batch's kernels hold every SM, wait for the kernel then
    running to end (stage.ep_exposed_seconds), so where those kernels are long (attention at 131,072 tokens) it
    is slower than the exchanges alone, and under an interleaved pipeline its schedule holds one chunk more."""
    values = {k: knob_values(k) for k in knobs}
    ks = set(values.values())
    return {k for k, v in values.items() if not ((not k.tpo and knob_variant(v, tpo=True) in ks)
                                                 or (not k.dpo and not k.overlap_bucket
                                                     and knob_variant(v, dpo=True) in ks)
                                                 or (not k.mcg and knob_variant(v, mcg=True) in ks)
                                                 or (k.pbuf != "freed" and knob_variant(v, pbuf="freed") in ks)
                                                 or (k.attn != "cudnn" and knob_variant(v, attn="cudnn") in ks))}


def _split_fixed_ok(spec: SearchSpec, tp: int, cp: int, pp: int) -> bool:
    dp = spec.cluster.num_gpus // (tp * cp * pp)
    return all(spec.fixed.get(name, value) == value for name, value in (("tp", tp), ("cp", cp), ("pp", pp), ("dp", dp)))


def splits(spec: SearchSpec) -> Iterator[tuple[int, int, int, int, int]]:
    """Every (tp, cp, pp, ep, etp) whose degrees fit the GPU count and the user's fixes."""
    n = spec.cluster.num_gpus
    for tp in divisors(n):
        for cp in cp_choices(spec, n // tp):
            for pp in divisors(n // (tp * cp)):
                if not _split_fixed_ok(spec, tp, cp, pp):
                    continue
                for ep, etp in expert_choices(spec, tp, cp, n // (tp * cp * pp)):
                    yield tp, cp, pp, ep, etp


def build_space(spec: SearchSpec) -> Space:
    """All legal layouts with their knob combinations; `rejected` counts why splits fell out."""
    knobs: dict[Layout, tuple[Knobs, ...]] = {}
    rejected: Counter = Counter()
    combos: dict[tuple, tuple[Knobs, ...]] = {}
    interned: dict[Knobs, Knobs] = {}  # one object per knob combination: the search keys on identity
    runs: dict[tuple, list] = {}  # framework_knobs' answers
    blocks = recompute_counts(spec) != (0,)  # block recompute counts to keep per layout (layout_knobs)
    by_chunk: dict[tuple, tuple[Knobs, ...]] = {}
    for tp, cp, pp, ep, etp in splits(spec):
        broken = split_violations(spec, tp, pp, cp, ep, etp)
        if broken:
            rejected[broken[0]] += 1
            continue
        before = len(knobs)
        ep_local = ep > 1 and ranks_per_domain(ep, etp, spec.cluster) >= ep
        cp_comms = legal_cp_comms(spec, tp, cp)
        refused = machine_refusals(spec, tp, pp, cp, ep, etp)
        for lay, fws in candidate_layouts(spec, tp, pp, cp, ep, etp):
            key = (fws, tp > 1, pp > 1, cp > 1, lay.vpp > 1, ep > 1, etp > 1, ep_local, cp_comms, refused)
            if key not in combos:  # the probe keeps ep > 1, etp > 1 (so ep x etp > 1) with the smallest degrees
                combos[key] = tuple(interned.setdefault(k, k) for k in knob_combinations(
                    spec, fws, tp, pp, cp, min(lay.vpp, 2), min(ep, 2), min(etp, 2), ep_local, cp_comms, refused,
                    runs))
            chosen = layout_knobs(combos[key], by_chunk, key, max(default_chunk_layers(
                spec.model.num_layers, lay.pp, lay.vpp))) if blocks else combos[key]
            if chosen:
                knobs[lay] = chosen
        if len(knobs) == before:
            rejected[unrun_split_reason(spec, tp, pp, cp, ep, etp)] += 1
    return Space(spec, knobs, rejected)


def layout_knobs(knobs: tuple[Knobs, ...], by_chunk: dict[tuple, tuple[Knobs, ...]], key: tuple,
                 largest_chunk: int) -> tuple[Knobs, ...]:
    """`knobs` (build_space's combination tuple of `key`) less the block recompute counts (Knobs.rcl) that reach a
    layout's largest model chunk (costmodel/rules.py: that is every layer, recompute_layers 0); kept in
    `by_chunk` by (key, largest_chunk), so that layouts alike share one tuple (the memory walk keys on its
    identity)."""
    if (key, largest_chunk) not in by_chunk:
        by_chunk[key, largest_chunk] = tuple(k for k in knobs if k.rcl < largest_chunk)
    return by_chunk[key, largest_chunk]


def knob_refusal(spec: SearchSpec, fw: base.Framework, probe: cm.Plan) -> str | None:
    """A refusal `fw` gives the split `probe` under every ZeRO stage it offers and every precision the
    user asked for (no recompute, sequence parallel where it splits), on the cluster: the reason no knob
    combination gets past, when one reason is shared by all of them (else None: the knobs fail apart)."""
    ks, machine = fw.knobs(probe.tp > 1, probe.pp > 1), base.Machine.of(spec.cluster)
    shared: list[str] | None = None  # in the order the rules give them (knob values first)
    for zero, precision in product(ks.zero_stage.values, spec.precisions):
        sp = probe.tp > 1 and True in ks.sequence_parallel.values
        # the framework's own runtime and kernels (as the search builds its knobs), so that a refusal is never
        # one of another framework's settings (pipeline buffers, the CP exchange, gathered SP inputs, weight casts)
        knobs = Knobs(zero, "none", sp, precision, "", cpc=ks.cp_comm.values[0], pbuf=ks.pipeline_buffers.values[0],
                      attn=fw.attention_kernels(spec.model, machine, ks).values[0],
                      dpo=spec.fixed.get("dpo", spec.overlap_dp_comm),
                      casts=ks.weight_casts.values[0] if precision in LOW_PRECISIONS else "step",
                      **own_knobs(fw, ks, spec.model, zero, sp, probe.tp, machine))
        plan = plan_over(probe, knob_plan_fields(knobs))
        found = base.violations(fw, spec.model, plan, machine) + cluster_violations(spec.cluster, plan)
        shared = found if shared is None else [msg for msg in shared if msg in found]
    return shared[0] if shared else None


def unrun_split_reason(spec: SearchSpec, tp: int, pp: int, cp: int, ep: int, etp: int) -> str:
    """Why no selected framework runs a split that breaks no cost-model rule: each framework's own
    layout rule where every one of them refuses the split outright (at vpp 1), else the knobs."""
    probe = plan_for(spec, Layout(tp, pp, spec.cluster.num_gpus // (tp * cp * pp), 1, 1, cp, ep, etp))
    rules = {name: base.split_violation(REGISTRY[name], spec.model, probe) for name in spec.frameworks}
    if all(rules.values()):
        return "; ".join(f"{REGISTRY[name].title}: {msg}" for name, msg in rules.items())
    common = {name: knob_refusal(spec, REGISTRY[name], probe) for name in spec.frameworks}
    if all(common.values()):
        return "; ".join(f"{REGISTRY[name].title}: {msg}" for name, msg in common.items())
    split = f"tp {tp}" + (f" x cp {cp}" if cp > 1 else "") + f" x pp {pp}"
    split += f" with ep {ep}" + (f", etp {etp}" if etp > 1 else "") if ep * etp > 1 else ""
    return f"no selected framework ({', '.join(spec.frameworks)}) runs {split} with the allowed knobs"
