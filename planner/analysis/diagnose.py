"""Why a plan is slow, and which levers help: the seed article's procedure with numbers.

The seed (shared/seed, on gradient-sync overhead) says: compare communication with compute; when
communication exceeds about 30% of the step, reach for gradient compression (FP16/INT8),
accumulation, overlap with backward compute, a larger global batch, keeping traffic inside the
NVLink domain, ZeRO/topology-aware sharding. Here each lever is a modified plan re-scored by the
cost model on the same cluster; only legal plans that fit in memory are offered.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from costmodel import types as cm
from costmodel.pipeline import chunk_layers
from costmodel.rules import plan_violations
from costmodel.stage import host_synced_dispatch
from costmodel.topology import domain_size, ep_ranks_per_domain
from planner.analysis.cpnote import MIN_CP_TOKENS
from planner.analysis.score import Scored, score
from planner.frameworks import REGISTRY
from planner.inputs import limits as L
from planner.inputs.plans import plan_to_dict
from planner.frameworks.base import (GRAD_SYNC_ZERO, Machine, as_run_by, offload_layer_counts,
                                     recompute_layer_counts, violations)

COMM_PARTS = ("tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm_exposed")
SHARE_PARTS = ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "moe_sync", "pp_comm", "offload", "dp_comm_exposed",
               "pp_bubble", "optimizer", "overhead")


def shares(s: Scored) -> dict[str, float]:
    """Each part's share of the step (they add up to 1)."""
    step = s.est.step_time_seconds
    return {k: s.est.time_breakdown_seconds[k] / step for k in SHARE_PARTS}


def exposed_comm_share(s: Scored) -> float:
    """Exposed communication (TP, CP, EP, PP and DP/ZeRO: COMM_PARTS) as a share of the step."""
    return sum(shares(s)[k] for k in COMM_PARTS)


@dataclass(frozen=True)
class Lever:
    name: str
    caveat: str
    change: Callable[[cm.Plan, cm.Cluster, cm.Model], cm.Plan | list[cm.Plan] | None]  # None (or []): does not apply
    # The framework whose feature the lever is (planner/frameworks): its changed plan may break none of
    # that framework's rules that the plan did not already break; "" for a lever of no one framework.
    framework: str = ""


def _if(cond: bool, plan: cm.Plan, **changes) -> cm.Plan | None:
    return replace(plan, **changes) if cond else None


LEVERS = (
    Lever("BF16 gradients", "standard mixed precision; no known accuracy cost",
          lambda p, c, m: _if(p.grad_comm_dtype == "fp32" and p.precision != "fp32", p, grad_dtype="bf16")),
    Lever("INT8 gradient compression", "lossy: accuracy risk, validate convergence (seed: fine at large batch)",
          lambda p, c, m: _if(p.grad_comm_dtype != "int8" and p.dp > 1, p, grad_dtype="int8")),
    Lever("overlap DP/ZeRO sync with backward", "needs bucketed gradient reduction (DDP buckets, "
          "Megatron --overlap-grad-reduce, DeepSpeed overlap_comm)",
          lambda p, c, m: _if(not p.overlap_dp_comm and p.dp > 1, p, overlap_dp_comm=True)),
    Lever("2x global batch by gradient accumulation", "same volume per sync, half the syncs per sample; "
          "changes convergence: retune the learning rate",
          lambda p, c, m: _if(p.dp > 1 or p.pp > 1, p, global_batch_size=2 * p.global_batch_size)),
    Lever("gather ZeRO-3 weights per layer", "one coalesced all-gather per layer (FSDP2 fully_shard per block, "
          "DeepSpeed's later coalesced fetch) instead of one per weight tensor: fewer ring latencies",
          lambda p, c, m: _if(p.zero_stage == 3 and p.zero3_gather_unit == "tensor" and p.dp > 1, p,
                           zero3_gather_unit="layer")),
    Lever("reduce-scatter gradients", "each rank receives only its shard (half an all-reduce's traffic); "
          "DeepSpeed: reduce_scatter and contiguous_gradients on",
          lambda p, c, m: _if(p.zero_stage >= 1 and p.grad_reduce == "allreduce" and p.dp > 1, p,
                           grad_reduce="reduce_scatter")),
    Lever("lower ZeRO stage", "more memory per GPU, less traffic (ZeRO-3 gathers every micro-batch)",
          lambda p, c, m: _at_zero(p, m, 1) if p.zero_stage >= 2 else None),
    Lever("higher ZeRO stage", "less memory per GPU: ZeRO-1 shards the optimizer states over data parallel, "
          "ZeRO-2 the gradients too, ZeRO-3 the weights too (gathered for every micro-batch: more traffic)",
          lambda p, c, m: [_at_zero(p, m, z) for z in range(p.zero_stage + 1, 4) if p.dp * p.cp > 1]),
    Lever("selective instead of full recompute", "more activation memory",
          lambda p, c, m: _if(p.recompute == "full", p, recompute="selective", recompute_layers=0)),
    Lever("full recompute of other layer counts", "only the first N layers of each model chunk replay their "
          "forward, the others keep their activations (Megatron --recompute-method block --recompute-num-layers N; "
          "0: every layer)",
          lambda p, c, m: [replace(p, recompute_layers=n)
                           for n in (0, *recompute_layer_counts(max(chunk_layers(m, p))))
                           if p.recompute == "full" and n != p.recompute_layers], framework="megatron"),
    Lever("no recompute", "every layer keeps its activations: no replay, the most activation memory (fused "
          "attention keeps no s x s scores, so selective recompute of the attention core saves little there)",
          lambda p, c, m: _if(p.recompute != "none", p, recompute="none", recompute_layers=0,
                              recompute_modules=cm.Plan().recompute_modules)),
    Lever("full recompute", "each layer keeps only its input and replays its forward in backward: about a third "
          "more compute for the least activation memory (Megatron --recompute-granularity full, DeepSpeed "
          "activation checkpointing, torchtitan activation_checkpoint.mode full)",
          lambda p, c, m: _if(p.recompute != "full", p, recompute="full",
                              recompute_modules=cm.Plan().recompute_modules)),  # the modules are selective's
    Lever("2x interleaved pipeline stages", "more p2p messages; the model chunks within a layer of equal where the "
          "layers do not divide by pp x vpp",
          lambda p, c, m: _if(p.pp > 1 and p.num_microbatches % p.pp == 0, p, vpp=2 * p.vpp, stage_layers=(),
                              recompute_layers=(p.recompute_layers + 1) // 2)),  # block recompute: chunks halve
    Lever("lower tensor parallelism", "each GPU holds more of every layer's weights and activations; more "
          "data-parallel ranks (less TP traffic per sample, more DP sync)",
          lambda p, c, m: _lower_tp(p)),
    Lever("sequence parallelism", "Megatron --sequence-parallel: norms and dropouts split over the TP group, each "
          "all-reduce a reduce-scatter and an all-gather (the same bytes on a ring, more collectives), less "
          "activation memory",
          lambda p, c, m: _if(p.tp > 1 and not p.sequence_parallel, p, sequence_parallel=True)),
    Lever("overlap TP collectives with the GEMMs", "Megatron --tp-comm-overlap (Transformer Engine userbuffers) or "
          "torchtitan AsyncTP; needs sequence parallelism; the collectives' SMs slow the GEMMs they hide behind",
          lambda p, c, m: _if(p.tp > 1 and p.sequence_parallel and not p.tp_comm_overlap, p, tp_comm_overlap=True)),
    Lever("TP inside the NVLink domain", "more pipeline or data parallelism instead",
          lambda p, c, m: _if(p.tp > domain_size(c) > 1, p, tp=domain_size(c), pp=p.pp * p.tp // domain_size(c))),
    Lever("EP inside the NVLink domain", "fewer experts' ranks per token exchange, more experts (and their "
          "weights and optimizer states) per GPU",
          lambda p, c, m: [q for q in _other_ep(p, m) if q.ep < p.ep and ep_ranks_per_domain(q, c) == q.ep
                           and ep_ranks_per_domain(p, c) < p.ep]),
    Lever("other expert-parallel size", "more EP ranks: fewer experts per GPU, more token exchange; fewer: the "
          "reverse (Megatron --expert-model-parallel-size)",
          lambda p, c, m: _other_ep(p, m)),
    Lever("overlap EP all-to-alls with compute", "Megatron --overlap-moe-expert-parallel-comm (1F1B A2A overlap: "
          "needs pp 1 or interleaving, no full recompute)",
          lambda p, c, m: _if(p.ep > 1 and not p.ep_overlap, p, ep_overlap=True), framework="megatron"),
    Lever("deduplicated token dispatch", "DeepEP / HybridEP (Megatron --moe-token-dispatcher-type flex): a token "
          "crosses the network once per node, not once per expert",
          lambda p, c, m: _if(p.ep > 1 and p.ep_dispatch != "deepep", p, ep_dispatch="deepep"), framework="megatron"),
    Lever("FP8 token dispatch", "tokens sent to the experts and gradients sent back to them in MXFP8, about half "
          "those exchanges' bytes (Megatron --moe-flex-dispatcher-backend ncclep --moe-dispatch-fwd-dtype mxfp8 "
          "--moe-combine-bwd-dtype mxfp8, Blackwell; NCCL EP priced like DeepEP, not validated)",
          lambda p, c, m: _if(m.moe is not None and p.ep_dispatch == "deepep" and p.ep_dispatch_dtype == "bf16",
                              p, ep_dispatch_dtype="mxfp8"), framework="megatron"),
    Lever("MoE CUDA graphs with DeepEP dispatch", "the router and dispatch preprocessing captured in CUDA graphs "
          "(Megatron --cuda-graph-impl transformer_engine --cuda-graph-modules moe_router moe_preprocess) with "
          "fixed-size DeepEP buffers: no host sync per MoE layer",
          lambda p, c, m: _if(m.moe is not None and host_synced_dispatch(p), p, ep_dispatch="deepep",
                              moe_cuda_graphs=True), framework="megatron"),
    Lever("whole-iteration CUDA graph", "the forward-backward captured once and replayed (Megatron --cuda-graph-impl "
          "full_iteration): no per-layer launch overhead or host sync; static shapes (MoE: HybridEP dispatch with a "
          "per-rank token budget, or experts padded to a capacity), no NaN check of the loss; graph memory not counted",
          lambda p, c, m: _if(not p.full_iteration_graph, p, full_iteration_graph=True, moe_cuda_graphs=False,
                              layer_cuda_graphs=False,
                              ep_dispatch="deepep" if m.moe is not None and not m.moe.capacity_factor
                              else p.ep_dispatch), framework="megatron"),
    Lever("activation offload", "whole layers' activations copied to host memory in forward and back in backward, "
          "beside the compute, over the host link, without recompute (Megatron --cpu-offloading-num-layers: pp 1, "
          "no recompute); "
          "the host memory they fill is not counted",
          lambda p, c, m: [replace(p, offload_layers=n, recompute="none", recompute_layers=0,
                                   recompute_modules=cm.Plan().recompute_modules)
                           for n in offload_layer_counts(m.num_layers)]
          if p.pp == 1 and not p.offload_layers else [], framework="megatron"),
    Lever("recompute whole MoE layers", "each MoE layer keeps only its input and replays router, dispatch, experts "
          "and combine in backward, beside the modules the plan already replays (Megatron "
          "--recompute-modules ... moe): its FLOPs, token exchange and host wait again",
          lambda p, c, m: _moe_recompute(p, m), framework="megatron"),
    Lever("offload the experts' inputs", "the routed rows before and after the experts' fc1 copied to host in forward "
          "and back before backward, beside the compute (Megatron --fine-grained-activation-offloading "
          "--offload-modules expert_fc1 moe_act); the host memory they fill is not counted",
          lambda p, c, m: _if(m.moe is not None and not p.offload_modules and c.host_link_bytes_per_second > 0
                              and p.recompute in ("none", "selective"), p, offload_modules=cm.MOE_OFFLOAD_MODULES),
          framework="megatron"),
    Lever("other context-parallel size", "each sequence split over cp GPUs in 2 x cp chunks (causal balance), their "
          "keys and values exchanged; activations / cp; fewer: the reverse, with more data parallelism (Megatron "
          "--context-parallel-size)",
          lambda p, c, m: _other_cp(p, m)),
    Lever("other CP exchange", "ring p2p overlaps attention; all-gather of K/V (Llama 3); all-to-all over heads "
          "(Ulysses, up to the KV heads); a2a+p2p (Megatron --cp-comm-type)",
          lambda p, c, m: [replace(p, cp_comm=x) for x in CP_EXCHANGES if p.cp > 1 and x != p.cp_comm]),
)

CP_EXCHANGES = cm.CP_COMMS


def _at_zero(p: cm.Plan, m: cm.Model, zero_stage: int) -> cm.Plan:
    """`p` at another ZeRO stage with the settings a framework ties to the stage moved with it: when gradients are
    reduced (chunk_end is ZeRO-1's, microbatch ZeRO 0's: base.GRAD_SYNC_ZERO; else buckets) and the runtime's
    reduce bucket (the framework whose bucket the plan carries, at the new stage: DeepSpeed's 5e8 elements at
    ZeRO 1/2, h^2 at ZeRO 3). Kept, a ZeRO-0 plan's microbatch sync left every higher stage refused, and a ZeRO-3
    bucket went to ZeRO-1 at its h^2 where DeepSpeed holds two of 5e8."""
    sync = p.grad_sync if (p.grad_sync, zero_stage) in GRAD_SYNC_ZERO else "buckets"
    bucket = p.grad_bucket_elements
    if bucket:
        owner = next((fw for fw in REGISTRY.values() if fw.grad_bucket_elements(m, p.zero_stage) == bucket), None)
        bucket = owner.grad_bucket_elements(m, zero_stage) if owner else bucket
    return replace(p, zero_stage=zero_stage, grad_sync=sync, grad_bucket_elements=bucket)


def _moe_recompute(p: cm.Plan, m: cm.Model) -> cm.Plan | None:
    """The plan with its MoE layers recomputed whole (the moe module, which holds moe_act and shared_experts),
    keeping the other modules it replays; none for a dense model, or one already replaying them."""
    if m.moe is None or p.recompute not in ("none", "selective") or "moe" in p.replayed_modules:
        return None
    modules = tuple(x for x in p.replayed_modules if x not in cm.INSIDE_MOE_MODULE) + ("moe",)
    return replace(p, recompute="selective", recompute_modules=modules)


def _other_ep(p: cm.Plan, m: cm.Model) -> list[cm.Plan]:
    """Every other ep dividing the expert count whose ep x etp divides the stage's tp x cp x dp ranks."""
    if m.moe is None:
        return []
    ranks = p.tp * p.cp * p.dp
    return [replace(p, ep=e) for e in range(1, m.moe.num_experts + 1)
            if m.moe.num_experts % e == 0 and e != p.ep and ranks % (e * p.etp) == 0]


def _other_cp(p: cm.Plan, m: cm.Model) -> list[cm.Plan]:
    """cp x 2, 4, ... taken from the data-parallel ranks, while each sequence splits into 2 x cp
    equal chunks, each rank keeping at least cpnote.MIN_CP_TOKENS tokens; and cp / 2, / 4, ... given back to
    them, down to 1, where the global batch divides over the ranks."""
    out, cp = [], p.cp * 2
    while p.dp * p.cp % cp == 0 and m.seq_length % (2 * cp) == 0 and m.seq_length // cp >= MIN_CP_TOKENS:
        dp = p.dp * p.cp // cp
        if p.global_batch_size % (p.micro_batch_size * dp) == 0:
            out.append(replace(p, cp=cp, dp=dp))
        cp *= 2
    cp = p.cp // 2
    while cp >= 1 and p.cp % cp == 0:
        dp = p.dp * p.cp // cp
        if p.global_batch_size % (p.micro_batch_size * dp) == 0:
            out.append(replace(p, cp=cp, dp=dp, cp_comm=p.cp_comm if cp > 1 else "p2p"))
        cp //= 2
    return out


def _lower_tp(p: cm.Plan) -> list[cm.Plan]:
    """Every smaller tp that divides it, with the data-parallel ranks grown to keep the GPUs; the
    micro-batch shrinks (by halves) until the global batch divides over the new ranks."""
    out = []
    for tp in range(p.tp - 1, 0, -1):
        if p.tp % tp:
            continue
        dp, mbs = p.dp * p.tp // tp, p.micro_batch_size
        while mbs > 1 and p.global_batch_size % (mbs * dp):
            mbs //= 2
        if p.global_batch_size % (mbs * dp) == 0:
            out.append(replace(p, tp=tp, dp=dp, micro_batch_size=mbs, sequence_parallel=p.sequence_parallel and tp > 1))
    return out


@dataclass(frozen=True)
class LeverResult:
    lever: Lever
    scored: Scored
    # What it is judged against: the base plan, or for a lever of one framework the base as that framework runs
    # it (as_framework_runs), so that its speed-up is the lever's and not the framework's code facts'.
    baseline: Scored

    def label(self, base: cm.Plan) -> str:
        """The lever's name, with the tp it settles on when that is what it changes."""
        p = self.scored.plan
        if p.tp != base.tp:  # the degrees that took the ranks TP gave up
            moved = ", ".join(f"{k} {getattr(p, k)}" for k in ("tp", "pp", "dp") if getattr(p, k) != getattr(base, k))
            return f"{self.lever.name} ({moved})"
        if p.ep != base.ep:
            return f"{self.lever.name} (ep {p.ep})"
        if p.cp != base.cp:
            return f"{self.lever.name} (cp {p.cp}, dp {p.dp})"
        if p.cp_comm != base.cp_comm:
            return f"{self.lever.name} ({p.cp_comm})"
        if p.offload_layers != base.offload_layers:
            return f"{self.lever.name} ({p.offload_layers} layers)"
        if p.vpp != base.vpp:
            return f"{self.lever.name} (vpp {p.vpp})"
        if p.zero_stage != base.zero_stage:
            return f"{self.lever.name} (ZeRO {p.zero_stage})"
        if p.recompute == base.recompute == "full" and p.recompute_layers != base.recompute_layers:
            return f"{self.lever.name} ({p.recompute_layers or 'every layer'} per chunk)"
        if p.ep_dispatch != base.ep_dispatch and "dispatch" not in self.lever.name:
            return f"{self.lever.name} (with DeepEP / HybridEP dispatch)"
        return self.lever.name

    def per_sample_seconds(self) -> float:
        return self.scored.est.step_time_seconds / self.scored.plan.global_batch_size

    def speedup(self) -> float:
        """Per sample, against its baseline."""
        return self.baseline.est.step_time_seconds / self.baseline.plan.global_batch_size / self.per_sample_seconds()


def try_levers(base: Scored, eff: cm.Efficiency | None = None, frameworks: tuple[str, ...] = (),
               memory_fraction: float = 1.0, keep: dict | None = None,
               base_fraction: float | None = None) -> list[LeverResult]:
    """Every lever that applies, is legal (to the cost model, to the framework whose feature it is, and to
    one of `frameworks` that runs the plan: suggest's --framework, or all of them), keeps the plan fields
    `keep` (suggest's --fix), fits in `memory_fraction` of the GPU (suggest's --max-memory-fraction) or, for a
    base that fits above it, needs no more than the base (no_fuller), and helps, re-scored; the largest speed-up
    per sample first. Helping is saving L.MIN_GAIN per sample, or making a plan that does not fit (in
    `base_fraction` of the GPU, estimate's verdict; else `memory_fraction`) fit. A lever of one framework is judged
    against the base as that framework runs it (LeverResult.baseline): against the base as scored, its speed-up
    took in the framework's own loss, kernels and runtime, and block recompute of one layer came out faster than
    none. Two
    levers that give one plan show once, under the first's name."""
    model = base.model.to_model()
    machine = Machine.of(base.cluster)
    refused = {name: set(violations(REGISTRY[name], model, base.plan, machine)) for name in frameworks}
    running = {name: refused[name] for name in frameworks if not refused[name]}
    running = running or refused  # none runs the base: a lever that adds no refusal to one of them
    fraction = memory_fraction if base_fraction is None else base_fraction
    out, seen, baselines = [], set(), {}
    for lever in LEVERS:
        changed = lever.change(base.plan, base.cluster, model)
        plans = [as_framework_runs(lever, plan, model, machine)
                 for plan in (changed if isinstance(changed, list) else [changed] if changed is not None else [])]
        if lever.framework not in baselines:
            plan = as_framework_runs(lever, base.plan, model, machine)
            baselines[lever.framework] = base if plan == base.plan else score(base.model, base.cluster, plan, eff)
        baseline = baselines[lever.framework]
        results = [LeverResult(lever, score(base.model, base.cluster, plan, eff), baseline) for plan in plans
                   if plan not in seen and all(getattr(plan, k) == v for k, v in (keep or {}).items())
                   and not plan_violations(model, base.cluster, plan)
                   and framework_allows(lever, model, base.plan, plan, base.cluster)
                   and one_runs(running, model, plan, machine)]
        # within memory_fraction of the GPU, or for a base that fits above it, no fuller than the base
        base_fits = fits(baseline, fraction)
        helps = [r for r in results if (fits(r.scored, memory_fraction) or base_fits and no_fuller(r.scored, baseline))
                 and (r.speedup() > 1 / (1 - L.MIN_GAIN) or not base_fits)]
        if helps:  # a lever with several settings shows its best
            best = min(helps, key=LeverResult.per_sample_seconds)
            seen.add(best.scored.plan)
            out.append(best)
    return sorted(out, key=lambda r: -r.speedup())


def as_framework_runs(lever: Lever, plan: cm.Plan, model: cm.Model, machine: Machine) -> cm.Plan:
    """The lever's plan with the code facts of the framework whose feature it is (frameworks.base.as_run_by: its
    kernels, projections, loss, RoPE fusion, the experts' prologue and where they read their token counts, when
    it reduces gradients): a torchtitan plan given a Megatron-LM lever runs as Megatron-LM runs it, the
    quick-GEGLU prologue's host waits and Megatron-core's copy of the token counts included."""
    return as_run_by(REGISTRY[lever.framework], model, plan, machine) if lever.framework else plan


def no_fuller(s: Scored, base: Scored) -> bool:
    """Whether the lever's plan needs no more memory than the base's: a base that fits at 93% of its GPU kept no
    lever, as every one had to be under 90% (a TP overlap at the same 74.1 GiB, 1.19x faster, was not offered)."""
    return s.est.memory_per_gpu_bytes <= base.est.memory_per_gpu_bytes


def fits(s: Scored, memory_fraction: float) -> bool:
    """Whether the plan's memory is within `memory_fraction` of its GPU's."""
    return s.est.memory_per_gpu_bytes <= memory_fraction * s.est.memory_capacity_bytes


def framework_allows(lever: Lever, model: cm.Model, before: cm.Plan, after: cm.Plan, cluster: cm.Cluster) -> bool:
    """Whether the lever's framework refuses nothing in `after` on `cluster` that it did not refuse in
    `before` (planner/frameworks base.violations): Megatron-LM's A2A overlap with full recompute, say."""
    if not lever.framework:
        return True
    fw, machine = REGISTRY[lever.framework], Machine.of(cluster)
    return set(violations(fw, model, after, machine)) <= set(violations(fw, model, before, machine))


def one_runs(running: dict[str, set], model: cm.Model, plan: cm.Plan, machine: Machine) -> bool:
    """Whether one of the frameworks that run the base plan (`running`: framework name -> what it refuses in the
    base, nothing; or all of suggest's --framework with their refusals when none runs it; none given: any) also
    runs the lever's `plan`, refusing nothing in it that it did not refuse in the base: DeepSpeed's pipelines
    cannot take the DP overlap lever, say, and a base no framework runs (an optimizer-state offload, which none
    writes) keeps the levers that add no refusal."""
    return not running or any(set(violations(REGISTRY[name], model, plan, machine)) <= base_refusals
                              for name, base_refusals in running.items())


def against(r: LeverResult, base: Scored) -> str:
    """What a lever judged against the base as its framework runs it says of that baseline, else nothing."""
    if r.baseline is base:
        return ""
    return (f"; speed-up against the plan as {REGISTRY[r.lever.framework].title} runs it "
            f"({r.baseline.est.step_time_seconds:.3f} s: its kernels, loss and runtime)")


def diagnosis_dict(base: Scored, threshold: float, levers: list[LeverResult]) -> dict:
    """The `diagnosis` object of `estimate --json`."""
    return {
        "shares": shares(base),
        "exposed_comm_share": exposed_comm_share(base),
        "threshold": threshold,
        "comm_bound": exposed_comm_share(base) > threshold,
        "levers": [{
            "lever": r.label(base.plan), "caveat": r.lever.caveat + against(r, base),
            "step_time_s": r.scored.est.step_time_seconds,
            "per_sample_speedup": r.speedup(),
            "baseline_step_time_s": r.baseline.est.step_time_seconds,
            "exposed_comm_share": exposed_comm_share(r.scored),
            "memory_per_gpu_bytes": r.scored.est.memory_per_gpu_bytes,
            "usd_per_step": r.scored.est.usd_per_step,
            "global_batch_size": r.scored.plan.global_batch_size,
            "plan": plan_to_dict(r.scored.plan),
        } for r in levers],
    }
