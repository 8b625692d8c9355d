"""The shape every framework module fills in: what the framework runs and what it refuses, and why.

A framework module (megatron.py, deepspeed.py, torchtitan.py) states, each rule cited to the
framework's source at a named version:
  * `layout_rules`: rules on the split (tp, cp, pp, dp, ep, etp, vpp, layer split), which must not
    read the micro-batch size or count (the search checks them once per split and vpp), and
    `interleaving_rules`: what a pipeline schedule (pp > 1, interleaved or not) asks of the
    micro-batch count (the search checks them per micro-batch size, for pp > 1 only);
  * `knobs(tp_split, pp_split)`: the values it accepts for each knob the search varies (ZeRO stage,
    recompute, sequence parallel, precision, gradient dtype per precision), each with the sentence
    that says why any other value is refused; they depend on the layout only through tp > 1, pp > 1;
  * `plan_rules`: rules across knobs and on plan fields the search leaves at their defaults
    (gradient reduction, ZeRO-3 gather unit). They too read the layout only through tp > 1, pp > 1,
    cp > 1, vpp > 1, ep > 1 and etp > 1 (the search probes one plan per such class); the CP exchange's
    own rules, which read tp and cp, the search checks per split (space.legal_cp_comms);
    they do not read overlap_dp_comm (the search checks them once for all its values; machine rules and
    the knob's own Choice decide it). They read the layers offloaded to host (Plan.offload_layers) only
    through whether there are any and fewer than the model's layers, and refuse no plan without offload
    that they would run with it (the search probes one count on the combinations that run without:
    space.framework_knobs).
  * `machine_rules`: rules that read the machine (Machine: GPU generation, node and NVLink domain
    sizes, RDMA) or a split's own degrees beside a knob, each on the search knobs it names, the split
    and nothing else, so the search checks every value of those knobs once per split
    (space.machine_refusals).
The search builds its space from all of them (planner/search/space.py) and the emitters refuse with
`violations` (planner/emit), so what an emitter refuses is exactly what the search leaves out.

Rules the cost model enforces for every plan whatever the framework (costmodel/rules.py: degrees
multiply to the GPU count, heads, kv heads and ffn divisible by tp, pp*vpp <= layers, the global
batch a multiple of mbs*dp) are not repeated here.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from costmodel import types as cm
from costmodel.compute import attention_kernels_priced_alike
from costmodel.lowp import is_low

Rule = Callable[[cm.Model, cm.Plan], Optional[str]]


@dataclass(frozen=True)
class Choice:
    """The values a framework accepts for one knob, and why it refuses the others."""

    values: tuple
    why: str


@dataclass(frozen=True)
class Knobs:
    zero_stage: Choice
    recompute: Choice
    sequence_parallel: Choice
    precision: Choice
    grad_dtype: Callable[[str], Choice]  # training precision -> gradient communication dtypes
    # How the low-precision weight casts run (Plan.weight_casts: "step" cached per step, "use" per use).
    weight_casts: Choice = Choice(("step",), "Transformer Engine caches the weight casts for the step")
    # TP collectives overlapped with the GEMMs beside them (Plan.tp_comm_overlap).
    tp_comm_overlap: Choice = Choice((False,), "no tensor-parallel communication overlap")
    # ZeRO-3: whether gathered weights are freed after forward (Plan.zero3_reshard).
    zero3_reshard: Choice = Choice((True,), "ZeRO-3 frees each layer's gathered weights after its forward")
    # MoE token dispatch (Plan.ep_dispatch).
    ep_dispatch: Choice = Choice(("alltoall",), "all-to-all token dispatch only")
    # The tokens' wire format towards the experts (Plan.ep_dispatch_dtype). Not searched, as below.
    ep_dispatch_dtype: Choice = Choice(("bf16",), "bf16 token dispatch only")
    # MoE router/dispatch in CUDA graphs (Plan.moe_cuda_graphs).
    moe_cuda_graphs: Choice = Choice((False,), "no CUDA graphs for the MoE layers")
    # The whole forward-backward as one CUDA graph (Plan.full_iteration_graph). Not searched: the search
    # scores plans without it (the graph could only shorten their steps); estimate and emit take it from the user.
    full_iteration_graph: Choice = Choice((False,), "no whole-iteration CUDA graph")
    # Each dense layer as CUDA graphs (Plan.layer_cuda_graphs). Not searched (the graphs' memory is not priced)
    # and not written: estimate and validate take it, for the published runs that used it.
    layer_cuda_graphs: Choice = Choice((False,), "no per-layer CUDA graphs (planner scores them for published runs "
                                       "but neither searches nor writes them)")
    # How ranks are numbered (Plan.rank_order). Not searched: the search scores the default order; estimate and
    # emit take the other from the user.
    rank_order: Choice = Choice(("tp-cp-dp-pp",), "ranks numbered tp, cp, dp, pp (pipeline stages outermost)")
    # Activations of whole layers copied to host memory during forward and back for backward (Plan.offload_layers):
    # True = the search tries the counts offload_layer_counts gives (space.offload_counts).
    activation_offload: Choice = Choice((False,), "no activation offload of whole layers")
    # Full recompute of the first layers of each model chunk only (Plan.recompute_layers): True = the search tries
    # the counts space.recompute_counts gives.
    block_recompute: Choice = Choice((False,), "full recompute takes every layer (Megatron-LM's --recompute-method "
                                               "block is the one that takes the first of each chunk)")
    # The inputs of chosen modules of every layer copied to host (Plan.offload_modules). Not searched: estimate,
    # diagnose and emit take it from the user.
    module_offload: Choice = Choice((False,), "no activation offload of single modules")
    # The optimizer's states and master weights kept in host memory between steps (Plan.offload_optimizer_states).
    # Not searched: estimate scores it; no framework's launch files write it (each says why).
    optimizer_offload: Choice = Choice((False,), "no optimizer-state offload")
    # The DP/ZeRO gradient sync run beside the backward (Plan.overlap_dp_comm) or after it. Where both
    # run, the search offers the overlap unless the user turns it off (--no-overlap) and keeps the
    # plain sync only when the overlapped one is refused (a rule) or off.
    overlap_dp_comm: Choice = Choice((True, False), "the gradient sync may overlap the backward or follow it")
    # Adam states (Plan.optimizer_states).
    optimizer_states: Choice = Choice(("fp32",), "fp32 optimizer states only")
    # Expert-parallel all-to-alls overlapped with another micro-batch's compute (Plan.ep_overlap).
    ep_overlap: Choice = Choice((False,), "no expert-parallel communication overlap")
    # How context-parallel ranks exchange keys and values (Plan.cp_comm), when cp > 1.
    cp_comm: Choice = Choice(("p2p",), "ring exchange of keys and values only")
    # What the pipeline runtime keeps between stages (Plan.pipeline_buffers), when pp > 1. Not a launch
    # setting (the emitters write the same files either way), but knob_violations checks it: the memory
    # differs by whole activations, so a plan scored with another runtime's buffers does not run here.
    pipeline_buffers: Choice = Choice(("freed",), "Megatron-core frees each stage output once sent "
                                                  "(schedules.py deallocate_output_tensor)")
    # How sequence parallel saves the QKV and MLP inputs (Plan.sp_gathered), when tp > 1: as the shard
    # (Megatron's linears re-gather it in backward). A property of the implementation, checked like
    # pipeline_buffers (it moves the activations' memory).
    sp_gathered: Choice = Choice((False,), "sequence-parallel inputs are saved as the shard and re-gathered in "
                                           "backward (tensor_parallel/layers.py)")
    # Whether the backward's column-parallel TP collectives run beside the GEMMs (Plan.tp_async_grad), when
    # tp > 1. A property of the implementation, one per framework, that moves time only: not checked.
    tp_async_grad: Choice = Choice((True,), "Megatron-core's linears (tensor_parallel/layers.py, async_op=True) and "
                                            "Transformer Engine's reduce the input gradient beside the "
                                            "weight-gradient GEMM")
    # How the model code writes the dense projections (Plan.projections). Like tp_async_grad a property of the
    # implementation, one per framework: not checked.
    projections: Choice = Choice(("fused",), "Megatron-core's attention runs Q, K and V as one GEMM (linear_qkv) and "
                                             "its MLP gate and up as one (linear_fc1, transformer/mlp.py)")
    # When the gradients are reduced (Plan.grad_sync) under ZeRO 0 and 1: in buckets during the last backward,
    # in place. A property of the runtime, not a launch setting, that moves time only: not checked.
    grad_sync: Choice = Choice(("buckets",), "gradients are reduced in buckets during the last backward")
    # The fused attention kernel the framework's stack runs (Plan.attention_kernel). Like
    # projections, knob_violations does not check it: the search scores each framework's plans with
    # its kernel; Megatron's launch files write the plan's (--attention-backend), the others' choose none.
    # How the loss runs over the logits (Plan.cross_entropy): the search scores the first value, the framework's
    # fastest, one per framework. Like projections, knob_violations does not check it: the launch files write the
    # framework's nearest loss (emit/megatron.py, emit/torchtitan.py) and their README says how to re-score a plan
    # scored with another (emit/readme.py otherwise_notes).
    cross_entropy: Choice = Choice(("vocab_parallel_fused", "vocab_parallel"),
                                   "Megatron-core's vocab-parallel cross entropy, compiled or eager")
    attention_kernel: Choice = Choice(("cudnn",), "the model code's PyTorch SDPA prefers cuDNN's kernel on Hopper "
                                                  "and Blackwell with a cuDNN newer than 9.15 (sdp_utils.cpp "
                                                  "check_prefer_cudnn_attention)")


AMD_GENERATIONS = ("cdna2", "cdna3", "cdna4")  # catalogs/gpus.yaml generations of AMD Instinct parts


@dataclass(frozen=True)
class Machine:
    """What machine rules read of a cluster. `generation` (the catalog's: ampere, hopper, blackwell,
    cdna3, ...) is None for a GPU the catalog does not name, `rdma` None when not known (a plan file
    from a cluster YAML): rules that need an unknown fact do not refuse on it."""
    generation: Optional[str]
    gpus_per_node: int
    nvlink_domain_size: int
    rdma: Optional[bool] = None

    @classmethod
    def of(cls, cluster: cm.Cluster) -> "Machine":
        return cls(cluster.gpu.generation, cluster.gpus_per_node, cluster.nvlink_domain_size, cluster.rdma)

    @property
    def rocm(self) -> bool:
        """An AMD Instinct GPU (CDNA), which the frameworks run through ROCm: what each of them runs there
        is its module's rocm_* rules."""
        return self.generation in AMD_GENERATIONS

    def nvlink_holds(self, ranks: int) -> bool:
        """Whether a group of `ranks` consecutive ranks fits in one NVLink domain."""
        return ranks <= self.nvlink_domain_size


@dataclass(frozen=True)
class MachineRule:
    """A rule checked once per split: it reads the machine, or a split's own degrees beside a knob.
    `check(model, machine, plan)` must read of the plan only the split's degrees (tp, cp, pp, dp, ep,
    etp), the search's fixed settings (overlap_pp_comm, flash_attention) and the fields named in `knobs` (cm.Plan
    field names of search knobs, space.PLAN_FIELDS' values), so that one check per split and value of those knobs
    decides it."""
    knobs: tuple[str, ...]
    check: Callable[[cm.Model, Machine, cm.Plan], Optional[str]]


@dataclass(frozen=True)
class Framework:
    name: str  # as on the command line: megatron, deepspeed, torchtitan
    title: str  # as people write it: Megatron-LM
    source: str  # the version its rules were read at
    layout_rules: tuple[Rule, ...]
    knobs: Callable[[bool, bool], Knobs]
    plan_rules: tuple[Rule, ...] = ()
    interleaving_rules: tuple[Rule, ...] = ()
    machine_rules: tuple[MachineRule, ...] = ()
    # Why the framework's launch files cannot build this model at all (torchtitan builds only model
    # definitions of its own, each up to its flavour's RoPE length), or None. Not a rule of its plans: the
    # search leaves such a framework out when another searched one builds the model (frameworks.building),
    # else scores the architecture under its rules and `suggest` warns that its plans could not be emitted.
    model_gap: Optional[Callable[[cm.Model], Optional[str]]] = None
    # Whether the framework's code applies this model's RoPE as one fused kernel (Plan.rope_fusion): not a
    # choice but a fact of its code per model, so one value per framework and model in the search.
    rope_fusion: Callable[[cm.Model], bool] = lambda model: True
    # Whether it runs RoPE unfused on request where it would fuse it (Megatron-LM's --no-rope-fusion).
    rope_unfused_on_request: bool = False
    # Whether the framework's code runs this model's expert activation through an eager prologue that waits
    # on the host (Plan.moe_act_prologue): a fact of its code per model, like rope_fusion.
    act_prologue: Callable[[cm.Model], bool] = lambda model: False
    # The elements of each reduce bucket the framework's runtime copies gradients into for their reduction
    # (Plan.grad_bucket_elements) at a ZeRO stage: a fact of its code, like the two above; 0 where gradients are
    # reduced where they are (Megatron-core's buffer, FSDP2).
    grad_bucket_elements: Callable[[cm.Model, int], int] = lambda model, zero_stage: 0
    # Whether the framework's grouped expert GEMMs take each expert's token count as a device tensor on this
    # machine (Plan.expert_sizes_on_device), so that an MoE layer without expert parallelism never waits on the
    # host: a fact of its code and the GPU's kernels, one value per framework and machine in the search.
    expert_sizes_on_device: Callable[["Machine"], bool] = lambda machine: False
    # The attention kernel its code runs for this model on this machine where that is not its knobs' (torchtitan's
    # gpt-oss: VarlenAttention, FlashAttention-3 on Hopper), else None: a fact of its code, like those above.
    attention_kernel_for: Callable[[cm.Model, "Machine"], Optional[Choice]] = lambda model, machine: None

    def knobs_for(self, plan: cm.Plan) -> Knobs:
        return self.knobs(plan.tp > 1, plan.pp > 1)

    def attention_kernels(self, model: cm.Model, machine: Optional["Machine"], ks: Knobs) -> Choice:
        """The attention kernels it runs for `model` on `machine`: attention_kernel_for's, else its knobs'
        (also where the machine is not known)."""
        return (self.attention_kernel_for(model, machine) if machine else None) or ks.attention_kernel

    def cannot_build(self, model: cm.Model) -> Optional[str]:
        """model_gap's line for `model`, or None (also for a framework without a model_gap)."""
        return self.model_gap(model) if self.model_gap else None


# The ZeRO stage each grad_sync value other than "buckets" describes (costmodel/rules.py).
GRAD_SYNC_ZERO = {("chunk_end", 1), ("microbatch", 0)}


def grad_sync_for(ks: Knobs, zero_stage: int) -> str:
    """When the framework reduces gradients under this ZeRO stage (Knobs.grad_sync, a runtime property)."""
    return next((g for g in ks.grad_sync.values if (g, zero_stage) in GRAD_SYNC_ZERO), "buckets")


@dataclass(frozen=True)
class Otherwise:
    """A setting a framework runs otherwise than a plan was scored with, one that moves time only (scored_otherwise):
    its label, the cm.Plan field, and the value the framework runs (its first, where it runs several)."""
    label: str
    field: str
    runs: object
    why: str = ""  # the framework's reason, where a Choice of its knobs gives one


def scored_otherwise(fw: Framework, model: cm.Model, plan: cm.Plan,
                     machine: Optional[Machine] = None) -> list[Otherwise]:
    """The settings `fw` runs otherwise than `plan` was scored with that move time only, so no rule refuses them
    (violations): the attention kernel, the projections, the loss, the TP input-gradient reduction, when the
    gradients are reduced, the RoPE fusion, the experts' activation prologue and, on a known machine, where an
    MoE model's expert GEMMs read their token counts at ep 1, each one per framework in the search
    (search/space.py); and the runtime's gradient reduce buckets, which move memory by a bucket or two (GiB where
    a model fills GPUs of tens), refused at emit only where the plan would then not fit (emit/deepspeed.py
    deepspeed_buckets). Each is checked only where the cost model reads it: the kernel with fused attention and
    where it is priced otherwise than the framework's (compute.attention_kernels_priced_alike: on Hopper,
    FlashAttention-2 against the others), the TP reduction with tp > 1 and no TP overlap (stage.
    layer_tp_comm_seconds), the gradient sync where data-parallel ranks reduce before ZeRO-2 (and not
    between the sync after each micro-batch and the bucketed one when there is one micro-batch: the same
    reduction, dataparallel.dp_sync_seconds and step.dp_overlap_window_seconds), the RoPE fusion beside the
    other fused kernels on a model with RoPE (layer.layer_times, compute.unfused_rope_bytes), the prologue and
    the token counts on an MoE model. The search labels a plan with the frameworks that run it as scored
    (search/report.py launchers), emit's README says how to re-score (emit/readme.py otherwise_notes), and
    diagnose's levers take their framework's values (analysis/diagnose.py as_framework_runs)."""
    ks = fw.knobs_for(plan)
    kernels = fw.attention_kernels(model, machine, ks)
    priced = [k for k in cm.ATTENTION_KERNELS if machine and machine.generation and any(
        attention_kernels_priced_alike(k, runs, machine.generation) for runs in kernels.values)]
    sync = grad_sync_for(ks, plan.zero_stage)
    same_sync = plan.num_microbatches == 1 and {plan.grad_sync, sync} <= {"buckets", "microbatch"}
    rope = (fw.rope_fusion(model), *((False,) if fw.rope_unfused_on_request else ()))
    moe = model.moe is not None
    checks = [("attention kernel", "attention_kernel", (*kernels.values, *priced), plan.flash_attention, kernels.why),
              ("projections", "projections", ks.projections.values, True, ks.projections.why),
              ("loss", "cross_entropy", ks.cross_entropy.values, True, ks.cross_entropy.why),
              ("TP input-gradient reduction async", "tp_async_grad", ks.tp_async_grad.values,
               plan.tp > 1 and not plan.tp_comm_overlap, ks.tp_async_grad.why),
              ("gradient sync", "grad_sync", (sync,), plan.dp * plan.cp > 1 and plan.zero_stage < 2 and not same_sync,
               ks.grad_sync.why),
              ("RoPE fused", "rope_fusion", rope, plan.fused_elementwise and model.position_embedding == "rope", ""),
              ("expert activation prologue", "moe_act_prologue", (fw.act_prologue(model),), moe, ""),
              ("expert token counts on the device", "expert_sizes_on_device",
               (fw.expert_sizes_on_device(machine) if machine else False,),
               moe and plan.ep == 1 and machine is not None, ""),
              ("gradient reduce bucket elements", "grad_bucket_elements",
               (fw.grad_bucket_elements(model, plan.zero_stage),), True, "")]
    return [Otherwise(label, field, runs[0], why) for label, field, runs, read, why in checks
            if read and getattr(plan, field) not in runs]


def priced_otherwise(fw: Framework, model: cm.Model, plan: cm.Plan, machine: Optional[Machine] = None) -> list[str]:
    """scored_otherwise's settings as 'label value' (the plan's value): `fw` runs the plan, but not as scored."""
    return [f"{o.label} {_word(getattr(plan, o.field))}" for o in scored_otherwise(fw, model, plan, machine)]


def as_run_by(fw: Framework, model: cm.Model, plan: cm.Plan, machine: Optional[Machine] = None) -> cm.Plan:
    """`plan` with each of scored_otherwise's settings at the value `fw` runs."""
    changes = {o.field: o.runs for o in scored_otherwise(fw, model, plan, machine)}
    return replace(plan, **changes) if changes else plan


def first_violation(rules: tuple[Rule, ...], model: cm.Model, plan: cm.Plan) -> Optional[str]:
    for rule in rules:
        msg = rule(model, plan)
        if msg:
            return msg
    return None


def layout_violation(fw: Framework, model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """The first layout or micro-batch rule of `fw` that `plan` breaks, or None."""
    return first_violation((*fw.layout_rules, *fw.interleaving_rules), model, plan)


def split_violation(fw: Framework, model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """The first layout rule (not reading the micro-batches) of `fw` that `plan` breaks, or None."""
    return first_violation(fw.layout_rules, model, plan)


def interleaving_violation(fw: Framework, model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """The first micro-batch rule of `fw`'s pipeline schedules that `plan` breaks, or None (always None
    for pp 1)."""
    if plan.pp == 1:
        return None
    return first_violation(fw.interleaving_rules, model, plan)


def knob_violations(fw: Framework, plan: cm.Plan) -> list[str]:
    """Each knob of `plan` outside the values `fw` accepts, with the framework's reason."""
    ks = fw.knobs_for(plan)
    grad = ks.grad_dtype(plan.precision)
    checks = [("ZeRO stage", plan.zero_stage, ks.zero_stage), ("recompute", plan.recompute, ks.recompute),
              ("sequence parallel", plan.sequence_parallel, ks.sequence_parallel),
              ("precision", plan.precision, ks.precision), ("gradient dtype", plan.grad_comm_dtype, grad)]
    if is_low(plan.precision):
        checks.append(("weight casts per", plan.weight_casts, ks.weight_casts))
    if plan.zero_stage == 3:
        checks.append(("ZeRO-3 reshard after forward", plan.zero3_reshard, ks.zero3_reshard))
    if plan.tp_comm_overlap:
        checks.append(("TP communication overlap", plan.tp_comm_overlap, ks.tp_comm_overlap))
    if plan.cp > 1:
        checks.append(("context-parallel exchange", plan.cp_comm, ks.cp_comm))
    if plan.ep_overlap:
        checks.append(("expert-parallel overlap", plan.ep_overlap, ks.ep_overlap))
    if plan.ep_dispatch != "alltoall":
        checks.append(("token dispatch", plan.ep_dispatch, ks.ep_dispatch))
    if plan.ep_dispatch_dtype != "bf16":
        checks.append(("token dispatch in", plan.ep_dispatch_dtype, ks.ep_dispatch_dtype))
    if plan.moe_cuda_graphs:
        checks.append(("MoE CUDA graphs", plan.moe_cuda_graphs, ks.moe_cuda_graphs))
    if plan.full_iteration_graph:
        checks.append(("whole-iteration CUDA graph", plan.full_iteration_graph, ks.full_iteration_graph))
    if plan.layer_cuda_graphs:
        checks.append(("per-layer CUDA graphs", plan.layer_cuda_graphs, ks.layer_cuda_graphs))
    if plan.offload_modules:
        checks.append(("module activation offload", True, ks.module_offload))
    if plan.recompute_layers:
        checks.append(("block recompute", True, ks.block_recompute))
    if plan.offload_optimizer_states:
        checks.append(("optimizer-state offload", True, ks.optimizer_offload))
    if plan.rank_order != "tp-cp-dp-pp":
        checks.append(("rank order", plan.rank_order, ks.rank_order))
    checks.append(("DP gradient sync overlapped", plan.overlap_dp_comm, ks.overlap_dp_comm))
    broken = [f"{label} {_word(value)}: {choice.why}" for label, value, choice in checks if value not in choice.values]
    return broken + runtime_violations(fw, plan) + numerics_violations(fw, plan)


def runtime_violations(fw: Framework, plan: cm.Plan) -> list[str]:
    """Properties of the runtime, not launch settings, that move memory by whole activations (pipeline buffers
    at pp > 1, sequence-parallel inputs saved gathered or sharded): a plan scored with another runtime's holds
    that runtime's memory, not this one's, so it is refused with the estimate flag that scores this one's."""
    ks = fw.knobs_for(plan)
    checks = []
    if plan.pp > 1:
        checks.append(("pipeline buffers", plan.pipeline_buffers, ks.pipeline_buffers,
                       f"--pipeline-buffers {ks.pipeline_buffers.values[0]}"))
    if plan.tp > 1 and plan.sequence_parallel:
        checks.append(("sequence-parallel inputs saved gathered", plan.sp_gathered, ks.sp_gathered,
                       "--sp-gathered" if ks.sp_gathered.values[0] else "no --sp-gathered"))
    return [f"the plan's memory assumes {label} {_word(value)}, but {choice.why}; score it as {fw.title} runs it "
            f"(planner estimate ... {flag})" for label, value, choice, flag in checks if value not in choice.values]


# The numerics the user sets for every plan (planner/inputs/planflags.py NUMERICS) that a framework offers
# as a Knobs choice: (label, Plan and Knobs field). The search checks them once per framework.
NUMERIC_CHOICES = (("optimizer states", "optimizer_states"),)


def numerics_violations(fw: Framework, plan: cm.Plan) -> list[str]:
    """Each NUMERIC_CHOICES value of `plan` that `fw` does not offer, with the framework's reason."""
    ks = fw.knobs_for(plan)
    return [f"{label} {_word(getattr(plan, name))}: {getattr(ks, name).why}" for label, name in NUMERIC_CHOICES
            if getattr(plan, name) not in getattr(ks, name).values]


def no_fp8_attention(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """No launch setting of the three frameworks turns on FP8 attention: Megatron-LM's arguments.py
    leaves TransformerConfig.fp8_dot_product_attention out of its flags (Megatron-Bridge sets it in
    Python), DeepSpeed and torchtitan have none."""
    if plan.fp8_attention:
        return "no launch flag turns on FP8 attention (Megatron-LM's CLI excludes fp8_dot_product_attention)"
    return None


def no_repeat_kv(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """None of the three frameworks' current releases repeats K/V to the query heads: Megatron-LM and
    Transformer Engine run grouped-query attention natively, torchtitan 0.3.0 passes enable_gqa to
    its attention (models/common/attention.py); Plan.repeat_kv describes older torchtitan runs."""
    if plan.repeat_kv and model.kv_heads != model.num_attention_heads:
        return "no current launch setting repeats K/V to the query heads (repeat_kv describes torchtitan of 2024)"
    return None


def all_plan_rules(fw: Framework) -> tuple[Rule, ...]:
    """`fw`'s own plan rules and those every framework shares."""
    return (*fw.plan_rules, no_fp8_attention, no_repeat_kv)


def plan_violations(fw: Framework, model: cm.Model, plan: cm.Plan) -> list[str]:
    return [msg for rule in all_plan_rules(fw) if (msg := rule(model, plan))]


def runs_plan(fw: Framework, model: cm.Model, plan: cm.Plan) -> bool:
    """Whether no plan rule of `fw` refuses `plan` (plan_violations empty), stopping at the first refusal:
    what the search asks of every knob combination."""
    return first_violation(all_plan_rules(fw), model, plan) is None


def machine_violations(fw: Framework, model: cm.Model, machine: Machine, plan: cm.Plan) -> list[str]:
    return [msg for rule in fw.machine_rules if (msg := rule.check(model, machine, plan))]


def violations(fw: Framework, model: cm.Model, plan: cm.Plan, machine: Optional[Machine] = None) -> list[str]:
    """Every rule of `fw` that `plan` breaks: layout, knob values, knob combinations, and on `machine`
    (when given) the machine rules."""
    layout = [msg for rule in (*fw.layout_rules, *fw.interleaving_rules) if (msg := rule(model, plan))]
    broken = layout + knob_violations(fw, plan) + plan_violations(fw, model, plan)
    return broken + (machine_violations(fw, model, machine, plan) if machine is not None else [])


def _word(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


# The shares of the layers a framework's activation offload (Knobs.activation_offload) is tried at: those
# NVIDIA's Llama 3 70B Megatron-FSDP recipes offload (20 and 40 of 80: validation/runs.yaml). No more: the
# host memory the copies fill is not in the cost model (40 layers of that recipe hold about 160 GB per GPU
# on a Grace host of 480 GB per two GPUs).
OFFLOAD_SHARES = (0.25, 0.5)


def offload_layer_counts(num_layers: int) -> tuple[int, ...]:
    """The layer counts OFFLOAD_SHARES give for a model of `num_layers` layers, each at least 1 and below
    the layer count (the search's space.offload_counts and diagnose's offload lever)."""
    return tuple(sorted({n for n in (round(num_layers * f) for f in OFFLOAD_SHARES) if 0 < n < num_layers}))


def recompute_layer_counts(layers: int) -> tuple[int, ...]:
    """The layers per model chunk block recompute (Plan.recompute_layers) is tried at below `layers`: the powers
    of two (suggest --block-recompute, space.recompute_counts, below the model's layers and then each layout's
    largest chunk; diagnose's lever, below the plan's largest chunk: at or above it is every layer)."""
    return tuple(2 ** i for i in range(max(layers, 1).bit_length()) if 2 ** i < layers)


def only_with_tp(tp_split: bool, why: str) -> Choice:
    """Sequence parallelism: on or off with tensor parallelism, off without (it splits along TP)."""
    return Choice((False, True) if tp_split else (False,), why)
