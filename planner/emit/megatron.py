"""Megatron-LM launch.sh for a plan: `torchrun ... pretrain_gpt.py` with model and plan flags.

Flag names are those of megatron/training/arguments.py and the dataclass-generated flags of
megatron/training/argument_utils.py (Megatron-LM d98e8a64); torchrun flags from
torch/distributed/run.py. The plan-derived flags are golden-tested; the whole list was checked
with Megatron-LM's own parse_args/validate_args (see tests/data/emit/README.md).
"""
from __future__ import annotations

import shlex
import textwrap

from costmodel.lowp import is_low
from costmodel.topology import ranks_in_domain
from planner.emit.job import Job, refuse_unless_runs
from planner.frameworks import megatron as megatron_rules
from planner.frameworks.megatron import FSDP_SHARDING, megatron_fsdp, pipeline_layout, uneven_split

Flags = list[tuple[str, object]]  # (flag, value): None for store_true flags, a tuple for nargs='+' flags
# The MLP activations pretrain_gpt.py takes as a flag (GeLU is its default; GeGLU it has not: frameworks/megatron.py)
MLP_FLAGS = {"swiglu": "--swiglu", "relu2": "--squared-relu", "quick_geglu": "--quick-geglu"}
MEGATRON_NORM_EPSILON = 1e-5  # TransformerConfig.layernorm_epsilon's default (--norm-epsilon)
# The fusions Megatron-LM runs by default and switches off one flag each (arguments.py store_false flags):
# what an eager plan (Plan.fused_elementwise off) prices, each elementwise op its own kernel.
UNFUSED_FLAGS = ("--no-masked-softmax-fusion", "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion",
                 "--no-bias-dropout-fusion", "--no-rope-fusion")


def model_flags(job: Job) -> Flags:
    """Shape flags; ffn is always explicit (Megatron's --swiglu default ffn differs from 4h)."""
    m, cm_model = job.model, job.model.to_model()
    out: Flags = [("--num-layers", m.num_layers), ("--hidden-size", m.hidden_size),
                  ("--ffn-hidden-size", cm_model.ffn), ("--num-attention-heads", m.num_attention_heads)]
    if m.num_kv_heads and m.num_kv_heads != m.num_attention_heads:
        # --num-query-groups alone is ignored (num_query_groups=None means MHA): both are needed.
        out += [("--group-query-attention", None), ("--num-query-groups", m.num_kv_heads)]
    out += [("--seq-length", m.seq_length), ("--max-position-embeddings", m.seq_length)]
    if m.mlp in MLP_FLAGS:
        out.append((MLP_FLAGS[m.mlp], None))
    if m.glu_linear_offset:
        out.append(("--glu-linear-offset", m.glu_linear_offset))
    if m.glu_clamp:
        out.append(("--activation-func-clamp-value", m.glu_clamp))
    if m.attention_sinks:
        out.append(("--softmax-type", "learnable"))
    if not m.tie_embeddings:
        out.append(("--untie-embeddings-and-output-weights", None))
    if not m.dropout:
        out += [("--attention-dropout", 0.0), ("--hidden-dropout", 0.0)]
    if not job.plan.fused_elementwise:
        out += [(flag, None) for flag in UNFUSED_FLAGS]
    elif not job.plan.rope_fusion:  # for YaRN without MLA arguments.py turns the fusion off by itself
        out.append(("--no-rope-fusion", None))
    if not job.plan.flash_attention:
        out.append(("--attention-backend", "unfused"))
    elif job.plan.attention_kernel == "flash2":  # else Transformer Engine picks cuDNN's on Hopper and later
        out.append(("--attention-backend", "flash"))
    elif job.plan.cp > 1:  # TE's context parallelism runs on cuDNN fused attention with Megatron's sbhd layout
        out.append(("--attention-backend", "fused"))
    if job.plan.cross_entropy != "vocab_parallel":  # the compiled loss (--cross-entropy-fusion-impl native): the
        out.append(("--cross-entropy-loss-fusion", None))  # plan's, or the nearest Megatron-LM runs (README note)
    return out + architecture_flags(job) + attention_flags(job) + moe_flags(job)


def attention_flags(job: Job) -> Flags:
    """Explicit head size (--kv-channels), multi-latent attention (arguments.py _add_mla_args: its CLI
    defaults differ from MLATransformerConfig's, so every size is written), sliding windows
    (TransformerConfig.window_size as "left,right", window_attn_skip_freq: every N-th layer full; a query at i
    attends to keys i - left .. i + right inclusive, Transformer Engine's dot_product_attention.py, so a window
    of w keys, the query's own among them as Hugging Face counts sliding_window, is w - 1 to the left, as
    Megatron-Bridge converts it since NVIDIA-NeMo/Megatron-Bridge #2656),
    multi-token prediction (--mtp-num-layers), query/key norms: TransformerConfig.qk_layernorm (the
    model's normalization per head, attention.py SelfAttention) or qk_l2_norm (Llama 4's L2Norm).
    Under MLA qk_layernorm is what builds DeepSeek's RMSNorms on the query and key/value latents
    (gpt_layer_specs.py: the up projections become layer-norm-fused linears), which every MLA model
    planner reads has (DeepseekV3Attention q_a_layernorm, kv_a_layernorm), so it is always written."""
    m, model, out = job.model, job.cm_model, []
    if m.head_dim and not m.mla:
        out.append(("--kv-channels", m.head_dim))
    if m.mla or m.qk_norm == "learned":
        out.append(("--qk-layernorm", None))
    elif m.qk_norm == "l2":
        out.append(("--qk-l2-norm", None))
    if m.mla:
        out.append(("--multi-latent-attention", None))
        if m.mla.q_lora_rank:
            out.append(("--q-lora-rank", m.mla.q_lora_rank))
        out += [("--kv-lora-rank", m.mla.kv_lora_rank), ("--qk-head-dim", m.mla.qk_nope_head_dim),
                ("--qk-pos-emb-head-dim", m.mla.qk_rope_head_dim), ("--v-head-dim", m.mla.v_head_dim)]
    if model.attention_window and model.attention_window < model.seq_length:
        out.append(("--window-size", f"{model.attention_window - 1},0"))
        if model.global_attention_every:
            out.append(("--window-attn-skip-freq", model.global_attention_every))
    if m.mtp_layers:
        out.append(("--mtp-num-layers", m.mtp_layers))
    return out


def moe_layer_pattern(model) -> str:
    """--moe-layer-freq as the Python list expression arguments.py's moe_freq_type evaluates: one 0
    (dense) or 1 (MoE) per layer, written as runs, e.g. ([0]*3+[1]*58)."""
    flags = [int(model.is_moe_layer(i)) for i in range(model.num_layers)]
    runs: list[list[int]] = []
    for f in flags:
        if runs and runs[-1][0] == f:
            runs[-1][1] += 1
        else:
            runs.append([f, 1])
    return "(" + "+".join(f"[{f}]*{n}" for f, n in runs) + ")"


def moe_flags(job: Job) -> Flags:
    """Routed experts (arguments.py --num-experts, the MoE fields of TransformerConfig): top-k,
    expert and shared-expert sizes, which layers are MoE, grouped GEMMs and the all-to-all token
    dispatcher (what the cost model prices), dropless unless a capacity factor is given (then padded
    to capacity, as planner prices it)."""
    moe = job.cm_model.moe
    if moe is None:
        return []
    out: Flags = [("--num-experts", moe.num_experts), ("--moe-router-topk", moe.experts_per_token),
                  ("--moe-ffn-hidden-size", moe.ffn_hidden_size), ("--moe-layer-freq", moe_layer_pattern(job.cm_model)),
                  ("--moe-grouped-gemm", None)]
    if job.plan.moe_cuda_graphs:
        out += [("--cuda-graph-impl", "transformer_engine"), ("--cuda-graph-modules", ("moe_router", "moe_preprocess"))]
    if job.plan.ep_dispatch == "deepep":  # needs the DeepEP library installed next to Megatron-LM
        backend = megatron_rules.flex_backend(job.machine, job.plan)
        out += [("--moe-token-dispatcher-type", "flex"), ("--moe-flex-dispatcher-backend", backend)]
        out += flex_flags(job)
    else:
        out.append(("--moe-token-dispatcher-type", "alltoall"))
    if moe.shared_ffn_hidden_size:
        out.append(("--moe-shared-expert-intermediate-size", moe.shared_ffn_hidden_size))
    if moe.capacity_factor:
        out += [("--moe-expert-capacity-factor", moe.capacity_factor), ("--moe-pad-expert-input-to-capacity", None)]
    return out + router_flags(job)


def flex_flags(job: Job) -> Flags:
    """The flex dispatcher's settings (planner/frameworks/megatron.py): an MXFP8 token dispatch
    (Plan.ep_dispatch_dtype; the forward dispatch and the combine's backward in MXFP8 on NCCL EP), a fixed
    per-rank token budget (rank_budget) and the Transformer Engine op fuser they need (op_fuser; the
    grouped GEMMs are written with the experts; what the fused expert MLP cannot run is refused by
    megatron_rules.fused_experts before this runs)."""
    model, plan, out = job.cm_model, job.plan, []
    if plan.ep_dispatch_dtype != "bf16":
        dtype = plan.ep_dispatch_dtype
        out += [("--moe-dispatch-fwd-dtype", dtype), ("--moe-combine-bwd-dtype", dtype)]
    if megatron_rules.rank_budget(model, plan):
        out.append(("--moe-expert-rank-capacity-factor", megatron_rules.RANK_CAPACITY_FACTOR))
    if megatron_rules.op_fuser(model, plan):
        out.append(("--use-transformer-engine-op-fuser", None))
    return out


def router_flags(job: Job) -> Flags:
    """The router as the model defines it (specs.MoeSpec router*), in TransformerConfig's terms
    (transformer_config.py @d98e8a64; moe/moe_utils.py topk_routing_with_score_function): softmax after
    the top-k is the default, --moe-router-pre-softmax takes it over all experts first, the sigmoid
    score renormalises the k weights when k > 1; the expert bias (aux-loss-free balancing, sigmoid
    only), group-limited routing (groups scored by the sum of their top k/group_topk) and the factor on
    the weights; and the shared experts' sigmoid gate (moe/shared_experts.py gate_weight, as Megatron-Bridge
    maps Qwen3-Next's shared_expert_gate); the load-balancing loss the model states (--moe-router-load-balancing-type
    aux_loss or seq_aux_loss with --moe-aux-loss-coeff; arguments.py's default coefficient 0 trains with none,
    which the README says where the model gives none)."""
    moe, out = job.model.moe, []
    if moe.router == "softmax_topk":
        out.append(("--moe-router-pre-softmax", None))
    elif moe.router == "sigmoid":
        out.append(("--moe-router-score-function", "sigmoid"))
    if moe.router_expert_bias:
        out.append(("--moe-router-enable-expert-bias", None))
    if moe.router_groups:
        out += [("--moe-router-num-groups", moe.router_groups), ("--moe-router-group-topk", moe.router_group_topk)]
    if moe.router_scaling_factor != 1.0:
        out.append(("--moe-router-topk-scaling-factor", moe.router_scaling_factor))
    if moe.router_probs_on_input:
        out.append(("--moe-apply-probs-on-input", None))
    if moe.shared_expert_gate:
        out.append(("--moe-shared-expert-gate", None))
    if moe.aux_loss_coeff:
        kind = "seq_aux_loss" if moe.aux_loss_scope == "sequence" else "aux_loss"
        out += [("--moe-router-load-balancing-type", kind), ("--moe-aux-loss-coeff", moe.aux_loss_coeff)]
    return out


def architecture_flags(job: Job) -> Flags:
    """Norm, position encoding and biases (arguments.py / TransformerConfig defaults: LayerNorm,
    learned absolute positions, biases on every linear layer, RoPE base 10000). ALiBi is refused by
    planner/frameworks/megatron.py before this runs."""
    m, out = job.model, []
    if m.normalization == "rmsnorm":
        out.append(("--normalization", "RMSNorm"))
    if m.norm_epsilon is not None and m.norm_epsilon != MEGATRON_NORM_EPSILON:
        out.append(("--norm-epsilon", m.norm_epsilon))
    if m.position_embedding == "rope":
        out += [("--position-embedding-type", "yarn" if job.cm_model.yarn_rope else "rope"),
                ("--rotary-base", round(m.rope_theta or 10000))]
        if m.rotary_percent != 1.0:
            out.append(("--rotary-percent", m.rotary_percent))
        if m.nope_every:  # TransformerConfig.no_rope_freq n: layers n-1, 2n-1, ... skip RoPE
            out.append(("--no-rope-freq", m.nope_every))
        out += rope_scaling_flags(m.rope_scaling, bool(m.mla))
    elif m.position_embedding == "none":
        out.append(("--position-embedding-type", "none"))
    if not m.linear_bias:
        out.append(("--disable-bias-linear", None))
        if m.qkv_bias:
            out.append(("--add-qkv-bias", None))
    return out


def rope_scaling_flags(r, mla: bool) -> Flags:
    """RoPE scaling as pretrain_gpt.py takes it (planner/frameworks/megatron.py rope_scaling refuses what it
    cannot): YaRN's factor as --rotary-scaling-factor (multi-latent attention's too, whose CLI default is 1,
    not MLATransformerConfig's 40), without MLA its other parameters as the --yarn-* flags (argument_utils.py
    _apply_yarn_config_from_args; Hugging Face's defaults written out); DeepSeek's attention scale pair only
    when the config gives both, non-zero (else Hugging Face scales cos and sin by 0.1 ln(factor) + 1, which
    Megatron-core's defaults, mscale 1 and mscale_all_dim 0, give too, and under MLA neither adds a softmax
    scale); Llama 3.1's as --use-rope-scaling; linear as the integer --rotary-seq-len-interpolation-factor."""
    if r is None:
        return []
    if r.rope_type == "llama3":
        return [("--use-rope-scaling", None), ("--rope-scaling-factor", r.factor)]
    if r.rope_type == "linear":
        return [("--rotary-seq-len-interpolation-factor", int(r.factor))]
    out: Flags = [("--rotary-scaling-factor", r.factor)]
    if not mla:
        out += [("--yarn-original-max-position-embeddings", r.original_max_position_embeddings),
                ("--yarn-beta-fast", 32.0 if r.beta_fast is None else r.beta_fast),
                ("--yarn-beta-slow", 1.0 if r.beta_slow is None else r.beta_slow)]
        if not r.truncate:
            out.append(("--no-yarn-correction-range-round-to-int", None))
    if r.mscale and r.mscale_all_dim:  # Hugging Face takes the pair only when both are set and non-zero
        out += [("--mscale", r.mscale), ("--mscale-all-dim", r.mscale_all_dim)]
    return out


def pipeline_flags(job: Job) -> Flags:
    """Interleaving and the layer split: even, first/last stages apart (--decoder-first/last-
    pipeline-num-layers), or any other as a layout, which also sets the virtual stages."""
    p, out = job.plan, []
    layout = pipeline_layout(job.cm_model, p)
    if layout:
        out.append(("--pipeline-model-parallel-layout", layout))
    elif p.vpp > 1:
        out.append(("--num-layers-per-virtual-pipeline-stage", job.model.num_layers // (p.pp * p.vpp)))
    if p.vpp > 1 and not p.overlap_pp_comm:
        out.append(("--no-overlap-p2p-communication", None))
    split = uneven_split(job.cm_model, p)
    if split:
        first, last = split
        out += [(f, n) for f, n in (("--decoder-first-pipeline-num-layers", first),
                                    ("--decoder-last-pipeline-num-layers", last)) if n is not None]
    return out


def parallel_flags(job: Job) -> Flags:
    """ZeRO-1 = --use-distributed-optimizer; ZeRO-2/3 = Megatron-FSDP (--use-megatron-fsdp with the sharding
    strategy, frameworks/megatron.py FSDP_SHARDING), which asserts --ckpt-format fsdp_dtensor (arguments.py)
    and which Megatron-LM's examples/megatron_fsdp and NVIDIA's recipes run with
    --no-gradient-accumulation-fusion (arguments.py only warns that Transformer Engine's fused accumulation
    may not support it). --overlap-param-gather needs the distributed optimizer or Megatron-FSDP and
    --overlap-grad-reduce (arguments.py); overlap flags only when there is a gradient sync to overlap: dense
    gradients reduce over dp x cp, expert gradients over expert-DP (distributed_data_parallel.py dp_cp_group
    and expt_dp_group), so dp 1 with cp or expert-DP ranks still syncs."""
    p = job.plan
    out: Flags = [("--tensor-model-parallel-size", p.tp), ("--pipeline-model-parallel-size", p.pp)]
    if p.rank_order == "tp-cp-pp-dp":  # initialize.py: order tp-cp-ep-pp-dp instead of tp-cp-ep-dp-pp
        out.append(("--use-tp-pp-dp-mapping", None))
        if job.cm_model.moe is None and p.cp > 1 and p.pp > 1:
            # parallel_state.initialize_model_parallel builds the experts' grid for a dense model too (etp = tp,
            # cp 1) and, unless the order ends in pp, asserts its data-parallel size and pipeline groups equal the
            # model's: etp x ep = tp x cp. NVIDIA's MLPerf pretrain.py (v5.1 llama31_405b, get_strategy) sets
            # etp = tp * cp // ep for this reason.
            out.append(("--expert-tensor-parallel-size", p.tp * p.cp))
    out += pipeline_flags(job) + context_flags(job)
    if job.cm_model.moe is not None:
        out += [("--expert-model-parallel-size", p.ep), ("--expert-tensor-parallel-size", p.etp)]
        if p.ep_overlap and p.ep > 1:
            out.append(("--overlap-moe-expert-parallel-comm", None))
    if p.sequence_parallel:
        out.append(("--sequence-parallel", None))
    if p.tp_comm_overlap:
        out.append(("--tp-comm-overlap", None))
    if p.offload_layers:
        out.append(("--cpu-offloading-num-layers", p.offload_layers))
    if p.offload_modules:
        out += [("--fine-grained-activation-offloading", None), ("--offload-modules", tuple(p.offload_modules))]
    if p.zero_stage >= 1:
        out.append(("--use-distributed-optimizer", None))
    if megatron_fsdp(p):  # its checkpoint format is asserted; NVIDIA's examples run it unfused
        out += [("--use-megatron-fsdp", None), ("--data-parallel-sharding-strategy", FSDP_SHARDING[p.zero_stage]),
                ("--ckpt-format", "fsdp_dtensor"), ("--no-gradient-accumulation-fusion", None)]
    if p.optimizer_states == "bf16":
        out += [("--use-precision-aware-optimizer", None), ("--exp-avg-dtype", "bf16"), ("--exp-avg-sq-dtype", "bf16")]
    if p.overlap_dp_comm and (p.dp * p.cp > 1 or (job.cm_model.moe is not None and p.expert_dp > 1)):
        out.append(("--overlap-grad-reduce", None))
        if p.zero_stage >= 1:
            out.append(("--overlap-param-gather", None))
    return out


def context_flags(job: Job) -> Flags:
    """--context-parallel-size and --cp-comm-type (spelled as Transformer Engine takes it: p2p,
    all_gather, a2a, a2a+p2p; Megatron passes the string on unchecked); a2a+p2p needs
    --hierarchical-context-parallel-sizes, the a2a group first: the CP ranks of one NVLink domain,
    as the cost model prices it (costmodel/context.py)."""
    p = job.plan
    if p.cp == 1:
        return []
    out: Flags = [("--context-parallel-size", p.cp), ("--cp-comm-type", p.cp_comm)]
    if p.cp_comm == "a2a+p2p":
        inner = ranks_in_domain(p.cp, p.tp, job.nvlink_domain_size)
        out.append(("--hierarchical-context-parallel-sizes", (inner, p.cp // inner)))
    return out


def low_precision_flags(p) -> Flags:
    """Transformer Engine recipes (arguments.py --fp8-format/--fp8-recipe, --fp4-format/--fp4-recipe;
    the formats Megatron-Bridge's mixed_precision.py pairs with each: hybrid E4M3/E5M2 for per-tensor
    and blockwise fp8, E4M3 for MXFP8), the 16-bit first/last layers and low-precision parameters
    (MXFP8 ones gathered through the gradient buffer, as Megatron-Bridge's bf16_with_mxfp8_mixed sets
    with fp8_param_gather: the memory NVIDIA's MXFP8 runs in validation/runs.yaml had)."""
    out: Flags = []
    if p.precision == "fp8":
        out += [("--fp8-format", "hybrid"), ("--fp8-recipe", p.fp8_recipe)]
    elif p.precision == "mxfp8":
        out += [("--fp8-format", "e4m3"), ("--fp8-recipe", "mxfp8")]
    elif p.precision == "nvfp4":
        out += [("--fp4-format", "e2m1"), ("--fp4-recipe", "nvfp4")]
    if p.bf16_layers_start + p.bf16_layers_end and is_low(p.precision):
        out += [("--first-last-layers-bf16", None), ("--num-layers-at-start-in-bf16", p.bf16_layers_start),
                ("--num-layers-at-end-in-bf16", p.bf16_layers_end)]
    if p.lowp_param_gather:
        out.append(("--fp4-param-gather" if p.precision == "nvfp4" else "--fp8-param-gather", None))
        if p.precision == "mxfp8" and p.zero_stage == 1:  # no second parameter buffer (optimizer_config.py warns
            # without it; Megatron-FSDP turns it off, arguments.py)
            out.append(("--reuse-grad-buf-for-mxfp8-param-ag", None))
    return out


def precision_flags(job: Job) -> Flags:
    """--bf16/--fp16 (exclusive), FP8 via Transformer Engine; gradient reduce dtype as planned."""
    p, out = job.plan, []
    if job.half_dtype:
        out.append((f"--{job.half_dtype}", None))
    out += low_precision_flags(p)
    if megatron_fsdp(p):  # Megatron-FSDP's own dtypes: main gradients "auto" = the parameters' 16-bit type,
        if job.half_dtype and p.grad_comm_dtype == "fp32":  # and the reduction follows them (arguments.py)
            out.append(("--megatron-fsdp-main-grads-dtype", "fp32"))
    elif job.half_dtype == "bf16" and p.grad_comm_dtype == "bf16":
        out.append(("--grad-reduce-in-bf16", None))
    elif job.half_dtype == "fp16" and p.grad_comm_dtype == "fp32":
        out.append(("--accumulate-allreduce-grads-in-fp32", None))
    return out


def recompute_flags(job: Job) -> Flags:
    """transformer_config.py: full needs a method and a layer count; selective takes neither.
    Full = every layer's input kept, each layer recomputed (uniform, 1 layer per unit); with
    Plan.recompute_layers N, the first N layers of each model chunk only (block, N; recompute.py)."""
    mode = job.plan.recompute
    if mode == "selective":
        modules = job.plan.recompute_modules
        return [("--recompute-granularity", "selective")] + (
            [] if modules == ("core_attn",) else [("--recompute-modules", tuple(modules))])
    if mode == "full" and job.plan.recompute_layers:
        return [("--recompute-granularity", "full"), ("--recompute-method", "block"),
                ("--recompute-num-layers", job.plan.recompute_layers)]
    if mode == "full":
        return [("--recompute-granularity", "full"), ("--recompute-method", "uniform"),
                ("--recompute-num-layers", 1)]
    return []


def graph_flags(job: Job) -> Flags:
    """The whole forward-backward as one CUDA graph (transformer_config.py cuda_graph_impl "full_iteration");
    arguments.py asserts --no-check-for-nan-in-loss-and-grad with it (the check reads the loss on the host).
    An MoE plan's flex dispatch gets a per-rank token budget so that its buffers have fixed sizes, with the
    op fuser that budget requires (flex_flags)."""
    if not job.plan.full_iteration_graph:
        return []
    return [("--cuda-graph-impl", "full_iteration"), ("--no-check-for-nan-in-loss-and-grad", None)]


def plan_flags(job: Job) -> dict[str, Flags]:
    """The plan-derived flag groups, after Megatron-LM's rules have been checked."""
    refuse_unless_runs(job, "megatron")
    p = job.plan
    batch: Flags = [("--micro-batch-size", p.micro_batch_size), ("--global-batch-size", p.global_batch_size)]
    return {"MODEL_ARGS": model_flags(job), "PARALLEL_ARGS": parallel_flags(job), "BATCH_ARGS": batch,
            "PRECISION_ARGS": precision_flags(job), "RECOMPUTE_ARGS": recompute_flags(job),
            "GRAPH_ARGS": graph_flags(job)}


def flat_args(job: Job) -> list[str]:
    """The plan-derived arguments as argv words (what the golden files hold)."""
    return [w for group in plan_flags(job).values() for f, v in group for w in (f, *values(v))]


def values(v: object) -> tuple[str, ...]:
    """The argv words of a flag's value: none, one, or one per item of a tuple."""
    if v is None:
        return ()
    return tuple(str(x) for x in v) if isinstance(v, tuple) else (str(v),)


def bash_array(name: str, flags: Flags) -> str:
    lines = [" ".join(["  " + f, *(shlex.quote(w) for w in values(v))]) for f, v in flags]
    return f"{name}=(\n" + "\n".join(lines) + "\n)"


def env_lines(job: Job) -> str:
    """The environment the launch needs: CUDA_DEVICE_MAX_CONNECTIONS (frameworks/megatron.py max_connections);
    UB_SKIPMC=1 where Transformer Engine's userbuffers (--tp-comm-overlap) fall back from CUDA multicast to IPC
    handles (userbuffers_without_multicast). On AMD GPUs ROCm's Transformer Engine fork runs MXFP8 only with
    NVTE_ROCM_ENABLE_MXFP8 set (frameworks/megatron.py rocm_fp8_recipe). Fine-grained activation offloading with
    TE >= 2.10 asserts NVTE_CPU_OFFLOAD_V1=1 (arguments.py d98e8a64)."""
    out = ""
    machine, plan = job.machine, job.plan
    connections = megatron_rules.max_connections(machine, plan)
    if connections:
        setting, why = connections
        out += "".join(f"# {line}\n" for line in textwrap.wrap(why, 110))
        out += ("unset CUDA_DEVICE_MAX_CONNECTIONS\n" if setting == "unset"
                else f"export CUDA_DEVICE_MAX_CONNECTIONS={setting}\n")
    if plan.tp_comm_overlap and megatron_rules.userbuffers_without_multicast(machine):
        out += ("# Transformer Engine's TP overlap needs CUDA multicast (compute capability 9.0+ and NVSwitch); this\n"
                "# machine uses its CUDA IPC fallback (examples/pytorch/comm_gemm_overlap/README.md @ v2.8).\n"
                "export UB_SKIPMC=1\n")
    if machine.rocm and plan.precision == "mxfp8":
        out += ("# ROCm's Transformer Engine fork keeps MXFP8 off unless this is set (its README; gfx950 only).\n"
                "export NVTE_ROCM_ENABLE_MXFP8=1\n")
    if plan.offload_modules:
        out += ("# Fine-grained activation offloading with Transformer Engine 2.10 or newer: Megatron-LM asserts this\n"
                "# (megatron/training/arguments.py), so that TE does not offload weights.\n"
                "export NVTE_CPU_OFFLOAD_V1=1\n")
    if megatron_rules.op_fuser(job.cm_model, plan) and job.cm_model.gated_mlp:
        out += ("# The op fuser (--use-transformer-engine-op-fuser) fuses gated experts only with Transformer\n"
                "# Engine's CuTe DSL grouped MLP switched on, or Megatron-LM asserts (moe/experts.py).\n"
                "export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1\n")
    return out


def data_args(job: Job) -> list[str]:
    """launch.sh's DATA_ARGS as argv words: mock data and a tokenizer of the model's vocabulary, so a launch
    starts without a dataset (tests/tools/megatron_build.py hands the same words to Megatron-LM)."""
    return ["--mock-data", "--tokenizer-type", "NullTokenizer", "--vocab-size", str(job.model.vocab_size)]


def run_flags(job: Job) -> str:
    """Training length, data and logging: placeholders that start a run, meant to be edited."""
    steps = (job.estimate.get("training") or {}).get("steps") or 1000
    return f"""# Run settings (placeholders: set your own schedule, data and checkpoints).
TRAINING_ARGS=(
  --train-iters "${{TRAIN_ITERS:-{steps}}}"
  --lr "${{LR:-3.0e-4}}" --min-lr "${{MIN_LR:-3.0e-5}}" --lr-decay-style cosine --lr-warmup-fraction 0.01
  --weight-decay 0.1 --clip-grad 1.0
)
# Mock data starts without a dataset. For real data (Megatron-LM takes one data source, so it replaces the
# mock data): DATA_PATH=PREFIX TOKENIZER_MODEL=NAME_OR_PATH bash launch.sh (a Hugging Face tokenizer).
if [[ -n "${{DATA_PATH:-}}" ]]; then
  DATA_ARGS=(--data-path "$DATA_PATH" --tokenizer-type HuggingFaceTokenizer
             --tokenizer-model "${{TOKENIZER_MODEL:?set TOKENIZER_MODEL with DATA_PATH}}")
else
  DATA_ARGS=({" ".join(data_args(job))})
fi
# Add --save DIR --save-interval N --load DIR to checkpoint.
LOGGING_ARGS=(--log-interval 10 --eval-interval 1000 --eval-iters 10)"""


def launch_sh(job: Job) -> str:
    groups = {name: flags for name, flags in plan_flags(job).items() if flags}  # empty arrays trip set -u in bash < 4.4
    arrays = "\n".join(bash_array(name, flags) for name, flags in groups.items())
    names = " \\\n  ".join(f'"${{{n}[@]}}"' for n in [*groups, "TRAINING_ARGS", "DATA_ARGS", "LOGGING_ARGS"])
    return f"""#!/usr/bin/env bash
# Megatron-LM launch for {job.title}.
# Written by `planner emit`; see ../README.txt. Run it on every node with NODE_RANK=0..{job.nnodes - 1}.
set -euo pipefail
{env_lines(job)}MEGATRON_LM="${{MEGATRON_LM:?set MEGATRON_LM to your Megatron-LM checkout}}"
DISTRIBUTED_ARGS=(
  --nproc_per_node {job.gpus_per_node} --nnodes {job.nnodes} --node_rank "${{NODE_RANK:-0}}"
  --master_addr "${{MASTER_ADDR:-127.0.0.1}}" --master_port "${{MASTER_PORT:-29500}}"
)
# Extra arguments to this script are passed on to pretrain_gpt.py.
{arrays}
{run_flags(job)}

torchrun "${{DISTRIBUTED_ARGS[@]}}" "$MEGATRON_LM/pretrain_gpt.py" \\
  {names} "$@"
"""


def files(job: Job) -> dict[str, tuple[str, bool]]:
    """{relative path: (text, executable)} for the megatron/ folder."""
    return {"launch.sh": (launch_sh(job), True)}
