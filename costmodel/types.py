"""Plain data the cost model works on: a model, a system, a plan, and tuning knobs.

Separation as in Calculon: *what* is trained (Model), *on what* (Gpu, Cluster), *how* (Plan),
and the few physical efficiency figures that turn peaks into achievable rates (Efficiency).
All quantities are SI base units (bytes, seconds, FLOPs); units live in the field names.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping

PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "mxfp8", "mxfp4", "nvfp4")  # low-precision recipes: costmodel/lowp.py
# selective = Megatron-LM's (attention core recomputed); op = torchtitan's per-op selective AC
# (every second matmul output recomputed); full = whole layer recomputed from its input.
RECOMPUTE_MODES = ("none", "selective", "op", "full")
# What selective recompute replays (Megatron --recompute-modules): the attention core (Korthikanti's
# selective recompute, the default), MLA's up projections, the dense MLP, the experts' activation
# function, the norms.
RECOMPUTE_MODULES = ("core_attn", "mla_up_proj", "mlp", "moe_act", "layernorm", "moe", "shared_experts")
MOE_RECOMPUTE_MODULES = ("moe_act", "moe", "shared_experts")  # replay parts of an MoE layer only
# Modules the moe module's replay (the whole MoE MLP) already holds: beside it they replay nothing more.
INSIDE_MOE_MODULE = ("moe_act", "shared_experts")
# Modules whose input Megatron's fine-grained activation offload copies to host memory (Plan.offload_modules,
# transformer_config.py offload_modules, d98e8a64): the two norms' inputs, the QKV projection's, the attention
# core's (Q, K, V), the output projection's, and an MoE layer's routed rows before fc1 and after it (moe_act's
# input). Not offered: fused_group_mlp (the Transformer Engine op fuser) and gdp_qkv (a GatedDeltaProduct mixer).
OFFLOAD_MODULES = ("attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act")
MOE_OFFLOAD_MODULES = ("expert_fc1", "moe_act")
GRAD_DTYPES = ("fp32", "bf16", "fp16", "int8")
ZERO3_GATHER_UNITS = ("layer", "tensor")  # Plan.zero3_gather_unit
GRAD_REDUCES = ("reduce_scatter", "allreduce")  # Plan.grad_reduce

MLPS = ("gelu", "relu2", "swiglu", "geglu", "quick_geglu")
# How the context-parallel ranks exchange keys and values (Megatron-core --cp-comm-type): ring
# point-to-point overlapped with blockwise attention, all-gather of K/V, all-to-all over heads
# (DeepSpeed-Ulysses), and all-to-all inside a group then ring across groups.
CP_COMMS = ("p2p", "all_gather", "all_gather_saved", "a2a", "a2a+p2p")
DISPATCH_DTYPES = ("bf16", "mxfp8")  # Plan.ep_dispatch_dtype
# The fused attention kernel a plan's stack runs (Plan.attention_kernel; compute.flash_attention_fraction):
# cuDNN's fused attention (Transformer Engine's FusedAttention, PyTorch SDPA's cuDNN backend), a
# FlashAttention-2-class kernel (the flash-attn 2 package, SDPA's flash backend), or FlashAttention-3, Hopper's
# own (Shah et al. 2024; PyTorch's varlen_attn with the FA3 implementation activated: torchtitan's gpt-oss).
ATTENTION_KERNELS = ("cudnn", "flash2", "flash3")
PIPELINE_BUFFERS = ("freed", "per_microbatch")  # Plan.pipeline_buffers (memory.pipeline_buffer_units)
GRAD_SYNCS = ("buckets", "chunk_end", "microbatch")  # Plan.grad_sync (dataparallel.dp_sync_seconds, step.py)
PROJECTIONS = ("fused", "fused_qkv", "separate")  # Plan.projections (compute.attention_gemms, compute.mlp_gemms)
# Plan.cross_entropy: how the loss runs over the logits (compute.LOSS_BYTES_PER_LOGIT, memory.last_stage_extra_bytes)
CROSS_ENTROPY = ("vocab_parallel_fused", "vocab_parallel", "fused", "eager")
RANK_ORDERS = ("tp-cp-dp-pp", "tp-cp-pp-dp")  # Plan.rank_order (topology.py)
WINDOW_KINDS = ("sliding", "chunked")
QK_NORMS = ("none", "learned", "learned_all_heads", "l2")  # Model.qk_norm
GATED_MLPS = ("swiglu", "geglu", "quick_geglu")

DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "mxfp8": 1, "mxfp4": 0.5, "nvfp4": 0.5, "int8": 1}


def _cached_hash(self) -> int:
    """The dataclass's own hash (of its fields' tuple), computed once per object: the search's caches
    hash the same Model, Cluster and Plan objects hundreds of thousands of times. Assigned as
    __hash__ in the class body, which dataclass(frozen=True) keeps."""
    try:
        return self.__dict__["_hash"]
    except KeyError:
        value = hash(tuple(getattr(self, f.name) for f in fields(self)))
        object.__setattr__(self, "_hash", value)
        return value


def _state_without_hash(self) -> dict:
    """Pickled state without the cached hash: a string's hash differs between processes."""
    return {k: v for k, v in self.__dict__.items() if k != "_hash"}


@dataclass(frozen=True)
class Moe:
    """A routed mixture-of-experts MLP (Shazeer et al. 2017; GShard; Switch; DeepSeekMoE): a router
    picks `experts_per_token` of `num_experts` expert MLPs for each token; shared experts see every
    token. Expert MLPs use the model's `mlp` activation."""

    num_experts: int
    experts_per_token: int  # top-k
    ffn_hidden_size: int  # one routed expert's intermediate width
    shared_ffn_hidden_size: int = 0  # all shared experts together (DeepSeek-V3: 1 x 2048), 0 = none
    first_dense_layers: int = 0  # leading layers with the dense MLP (DeepSeek-V3 first_k_dense_replace 3)
    layer_freq: int = 1  # after those, layer i (0-based) is MoE when (i + 1) % layer_freq == 0
    capacity_factor: float = 0.0  # expert capacity over the balanced share; 0 = dropless
    # the router's weight scales the expert's input, not its output (Llama 4): an element-wise product that
    # costs nothing here, carried so that framework rules can refuse the kernels that cannot apply it
    router_probs_on_input: bool = False


@dataclass(frozen=True)
class Mla:
    """Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 Sec 2.1): queries (optionally) and
    keys/values go through low-rank latents; each head's query/key has a no-position part and a
    shared RoPE part."""

    q_lora_rank: int  # 0 = queries projected directly from the hidden state
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class RopeScaling:
    """How RoPE's frequencies are rescaled (planner/inputs/specs.py RopeScalingSpec, whose docstring gives the
    kinds): a launch detail, priced only where a stack runs the rescaled RoPE unfused (Plan.rope_fusion).
    None: a parameter the model's config leaves to its default."""

    kind: str  # "yarn", "llama3" or "linear"
    factor: float
    original_max_position_embeddings: int | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool = True
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer (GPT / Llama family), dense or mixture-of-experts."""

    __hash__ = _cached_hash
    __getstate__ = _state_without_hash

    name: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    vocab_size: int
    seq_length: int
    num_kv_heads: int = 0  # 0 means "same as num_attention_heads" (multi-head attention)
    ffn_hidden_size: int = 0  # 0 means 4 * hidden_size
    # MLP activation: "gelu" or "relu2" (squared ReLU), 2 matrices; "swiglu", "geglu" or "quick_geglu"
    # (gate x sigmoid(1.702 gate), gpt-oss), gated, 3 matrices
    mlp: str = "gelu"
    tie_embeddings: bool = False
    dropout: bool = False
    # Architecture details a launch script must state. The cost model does not read them: a norm's
    # bias, linear biases (h to 4h values per layer) and position encodings change parameters and
    # FLOPs by under 0.1% of a layer; RMSNorm and LayerNorm move the same bytes.
    normalization: str = "layernorm"  # or "rmsnorm"
    position_embedding: str = "learned"  # learned absolute, "rope", "alibi" or "none"
    rope_theta: float = 0.0  # RoPE base frequency (0 without RoPE)
    rope_scaling: RopeScaling | None = None  # RoPE's frequencies rescaled (YaRN, Llama 3.1's, linear)
    rotary_percent: float = 1.0  # share of a head's dimensions RoPE rotates
    linear_bias: bool = True  # biases on every linear layer (GPT-2, Megatron's default)
    qkv_bias: bool = False  # a bias on the QKV projection even without linear biases (Qwen2)
    # Norm of the queries and keys (not with MLA, whose latent norms are part of it): "learned", per head,
    # the model's `normalization` with a learned scale (Qwen3, Gemma 3; Megatron-core qk_layernorm),
    # "learned_all_heads" the same over all heads' queries and all heads' keys at once (OLMoE), "l2" per
    # head, weightless (Llama 4; qk_l2_norm), or "none". Not priced: its traffic is, like RoPE's, work around
    # the attention kernel that the fitted attention fractions absorb; the input Transformer Engine's
    # norm keeps for backward is left out too (validation/README.md, "Query/key norms").
    qk_norm: str = "none"
    # A learned logit per head that joins each softmax (gpt-oss's attention sinks). Not priced (one value
    # per head); framework rules read it (Transformer Engine runs it under CP only with a2a).
    attention_sinks: bool = False
    # The gated MLP's clamp (gpt-oss: 7, the gate clamped above and the up projection on both sides; 0: none).
    # Priced only where the stack clamps with eager ops before its fused activation (Plan.moe_act_prologue).
    glu_clamp: float = 0.0
    # Launch details that cost nothing here, carried so that framework rules can refuse a stack that would
    # train another model: the norms' epsilon (0: unstated) and every n-th layer without RoPE (Llama 4's NoPE
    # layers; 0: none)
    norm_epsilon: float = 0.0
    nope_every: int = 0
    attention_head_dim: int = 0  # 0 means hidden_size / num_attention_heads (Gemma, Qwen3: explicit)
    moe: Moe | None = None
    mla: Mla | None = None
    # Multi-token prediction modules (DeepSeek-V3 Sec 2.2): each one more transformer layer, a 2h x h
    # projection and another pass through the shared output layer, on the last pipeline stage.
    mtp_layers: int = 0
    # Local attention: each token sees at most `attention_window` keys ("sliding": the previous w;
    # "chunked": those in its own w-token chunk, Llama 4). 0 = full causal attention everywhere.
    # With global_attention_every n > 0, layer i (0-based) is global when (i + 1) % n == 0 (Gemma 3:
    # 6; Gemma 2, gpt-oss: 2; Llama 4: 4), the others local; 0 = every layer local.
    attention_window: int = 0
    global_attention_every: int = 0
    window_kind: str = "sliding"

    def is_moe_layer(self, index: int) -> bool:
        """True when transformer layer `index` (0-based) has the routed-expert MLP."""
        moe = self.moe
        return moe is not None and index >= moe.first_dense_layers and (index + 1) % moe.layer_freq == 0

    def is_local_attention_layer(self, index: int) -> bool:
        """True when layer `index` attends within the window only."""
        if not self.attention_window or self.attention_window >= self.seq_length:
            return False
        return not (self.global_attention_every and (index + 1) % self.global_attention_every == 0)

    @property
    def moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    @property
    def yarn_rope(self) -> bool:
        """A YaRN-scaled RoPE on multi-head or grouped-query attention (multi-latent attention's YaRN has kernels of
        its own): the RoPE a stack may have to apply as separate ops (planner/frameworks/megatron.py)."""
        return self.rope_scaling is not None and self.rope_scaling.kind == "yarn" and self.mla is None

    @property
    def biased_quick_geglu_experts(self) -> bool:
        """Routed experts with a gated quick-GELU and linear biases (gpt-oss): the activation a stack may run
        through a fused kernel with an eager prologue (Plan.moe_act_prologue; planner/frameworks/megatron.py)."""
        return self.moe is not None and self.mlp == "quick_geglu" and self.linear_bias

    @property
    def gated_mlp(self) -> bool:
        """Gated linear unit (SwiGLU, GeGLU: gate and up projections, then down; Shazeer 2020)."""
        return self.mlp in GATED_MLPS

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_attention_heads

    @property
    def ffn(self) -> int:
        return self.ffn_hidden_size or 4 * self.hidden_size

    @property
    def head_dim(self) -> int:
        return self.attention_head_dim or self.hidden_size // self.num_attention_heads


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_bytes: float
    dense_flops_per_second: dict[str, float]  # precision -> dense peak
    hbm_bandwidth_bytes_per_second: float
    nvlink_bandwidth_bytes_per_second: float  # per GPU, one direction; 0 without NVLink
    generation: str = "hopper"
    # A board whose GPUs are meshed point to point (AMD Infinity Fabric / xGMI: one link to each peer, no
    # switch): one link's bandwidth per direction, so a group of k GPUs of the board reaches (k - 1) links
    # (topology.nvlink_link); 0 for a switched fabric (NVSwitch), where any group gets the GPU's whole rate.
    peer_link_bytes_per_second: float = 0.0
    # Sustained tensor-core clock relative to the one the peaks are rated at (1.0; below 1 under a
    # power cap, see compute.power_capped_clock_fraction). Scales compute-bound kernels only.
    tensor_clock_fraction: float = 1.0
    tdp_watts: float = 0.0  # rated board power, 0 = unknown (what-if power caps need it)
    # Measured large-GEMM fraction of the dense peak per precision (MAMF / peak); precisions without a
    # measurement use Efficiency's per-generation value.
    matmul_fraction: dict[str, float] = field(default_factory=dict)
    exp_per_second: float = 0.0  # special-function exp throughput (softmax), 0 = not modelled
    # Measured (or derived from a measured part's) fused-attention kernel rate as fractions of the bf16 peak,
    # (forward, backward), at the shape Efficiency.attention_reference_fraction names; () = neither (the
    # generation's fitted fraction).
    attention_fraction: tuple[float, ...] = ()
    # Measured FP8 over bf16 fused-attention rate, (forward, backward), one benchmark run at one shape
    # (compute.fp8_attention_speedup); () = not measured (Efficiency.fp8_attention_speedup).
    attention_fp8_speedup: tuple[float, ...] = ()

    def peak_flops_per_second(self, precision: str) -> float:
        """Dense peak for a GEMM precision; fp8 falls back to bf16 on GPUs without fp8 units."""
        table = self.dense_flops_per_second
        if precision == "fp32":
            # Frameworks train "fp32" with TF32 tensor cores where they exist (PyTorch default for convs,
            # Megatron --fp32 keeps allow_tf32); plain fp32 only on hardware without TF32.
            return table.get("tf32", table.get("fp32", 0.0))
        if precision == "fp8" and "fp8" not in table:
            return table["bf16"]
        if precision in ("nvfp4", "mxfp4"):  # both 4-bit block-scaled formats run at the FP4 tensor rate
            return table.get(precision, table.get("fp4", 0.0))
        return table.get(precision, 0.0)


@dataclass(frozen=True)
class Cluster:
    name: str
    gpu: Gpu
    num_gpus: int
    gpus_per_node: int
    nvlink_domain_size: int
    nvlink_bandwidth_bytes_per_second: float  # per GPU, one direction
    network_bandwidth_bytes_per_second: float  # per GPU, one direction, nominal
    rdma: bool = True
    usd_per_gpu_hour: float = 0.0
    # Measured figures (nccl-tests bus bandwidth, latency) replace nominal x efficiency when > 0.
    nvlink_busbw_bytes_per_second: float = 0.0
    network_busbw_bytes_per_second: float = 0.0
    nvlink_latency_seconds: float = 0.0
    network_latency_seconds: float = 0.0
    # Measured (fitted from timed steps, `planner calibrate --step-times`): multiplies the
    # achievable matmul fraction of peak (Efficiency.matmul_peak_fraction / fp8_...); 1.0 = as published.
    matmul_efficiency_scale: float = 1.0
    # GPU <-> host memory, per GPU, one direction (PCIe Gen5 x16 on x86 nodes, NVLink-C2C on Grace
    # nodes); 0 = unknown (activation offload needs it).
    host_link_bytes_per_second: float = 0.0


@dataclass(frozen=True)
class Plan:
    """One parallel execution of one training step.

    Ranks are laid out Megatron-style ("tp-cp-ep-dp-pp"): TP innermost (consecutive GPUs), then CP,
    then DP, then PP outermost; a pipeline stage's tp x cp x dp ranks also hold the experts, folded
    as etp x ep x expert-DP (Megatron-core MoE parallel folding, etp innermost). `stage_layers`
    optionally gives the number of transformer layers on each of the pp*vpp model
    chunks in pipeline order (uneven splits); empty means as even as possible.
    """

    __hash__ = _cached_hash
    __getstate__ = _state_without_hash

    tp: int = 1
    pp: int = 1
    dp: int = 1
    vpp: int = 1
    micro_batch_size: int = 1
    global_batch_size: int = 1
    zero_stage: int = 0
    recompute: str = "none"
    # Under recompute "full", the layers of each model chunk (a pipeline stage, or each virtual stage under
    # vpp) recomputed: its first N, the rest keeping their activations (Megatron-core recompute.py
    # checkpointed_forward, --recompute-method block --recompute-num-layers N). 0: every layer.
    recompute_layers: int = 0
    sequence_parallel: bool = False
    precision: str = "bf16"
    grad_dtype: str = ""  # dtype gradients are communicated in; "" = precision's default
    overlap_dp_comm: bool = True
    overlap_pp_comm: bool = True  # interleaved schedules overlap p2p with the next chunk's compute
    flash_attention: bool = True
    # Which fused attention kernel runs (ATTENTION_KERNELS): it matters on Hopper, where cuDNN's kernel
    # uses the Hopper-only warpgroup MMA and FlashAttention-2's does not (Efficiency below). "cudnn" is
    # what Transformer Engine selects on sm90+ (dot_product_attention/utils.py get_attention_backend),
    # and PyTorch's SDPA with a cuDNN newer than 9.15 (sdp_utils.cpp check_prefer_cudnn_attention);
    # "flash2" also stands for FlexAttention's Triton kernels (torchtitan's default).
    attention_kernel: str = "cudnn"
    fused_elementwise: bool = True  # False: eager PyTorch kernels (torchtitan without torch.compile)
    # RoPE applied by one fused kernel (Transformer Engine's fused_apply_rotary_pos_emb, or compiled); False:
    # Megatron-core's eager path (compute.unfused_rope_bytes), which Megatron-LM takes for YaRN without
    # multi-latent attention. Under fused_elementwise False the eager kernels count RoPE already.
    rope_fusion: bool = True
    # How the loss runs over the logits (CROSS_ENTROPY; compute.LOSS_BYTES_PER_LOGIT): Megatron's vocab-parallel
    # steps on an fp32 copy, compiled (--cross-entropy-loss-fusion, the default) or eager (Megatron-LM without
    # the flag, Megatron-DeepSpeed, NeMo 1.x); "fused": kernels over the 16-bit logits (Transformer Engine's
    # parallel cross entropy, torchtitan's compiled loss); "eager": F.cross_entropy(logits.float()).
    cross_entropy: str = "vocab_parallel_fused"
    zero3_gather_unit: str = "layer"  # or "tensor": one AllGather per weight (DeepSpeed ZeRO-3 of 2021)
    grad_reduce: str = "reduce_scatter"  # or "allreduce": full gradient AllReduce under ZeRO (DeepSpeed)
    stage_layers: tuple[int, ...] = ()
    fp8_recipe: str = "delayed"  # fp8 scaling: delayed, tensorwise (current) or blockwise (costmodel/lowp.py)
    bf16_layers_start: int = 0  # transformer layers kept 16-bit at the start / end of the stack under
    bf16_layers_end: int = 0  # fp8/mxfp8/mxfp4/nvfp4 (Megatron --first-last-layers-bf16)
    # Low-precision weight casts: "step" = once per optimizer step, kept in memory in the layouts written
    # (Transformer Engine's cached casts, lowp.te_layouts); "use" = at every use, nothing kept (torchao float8).
    weight_casts: str = "step"
    # ZeRO-3/FSDP: free the gathered weights after each layer's forward (True) or keep them until its
    # backward (False: torchtitan with pipeline parallelism, reshard_after_forward=False), which saves
    # the backward's gather and holds the whole stage's weights unsharded.
    zero3_reshard: bool = True
    # Tensor-parallel collectives decomposed and overlapped with the GEMMs next to them (Megatron
    # --tp-comm-overlap with Transformer Engine userbuffers; torchtitan AsyncTP); needs sequence parallel.
    tp_comm_overlap: bool = False
    # Without that overlap, whether the backward's TP collectives of the column-parallel linears run on their
    # own stream beside a GEMM that does not wait for them (stage.backward_tp_comm_seconds): the input
    # gradient's all-reduce (reduce-scatter under sequence parallel) beside the weight-gradient GEMM, and
    # under sequence parallel the input's all-gather again beside the input-gradient GEMM. Megatron-LM's
    # linears since cf7efd4 (2021-08-30; tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication,
    # async_op=True) and Transformer Engine's (pytorch/module/linear.py: dgrad_work, inputmat_total_work).
    # False: each shows whole (Megatron-LM before, Megatron-DeepSpeed under DeepSpeed, DTensor's eager TP).
    tp_async_grad: bool = True
    # Layers per pipeline stage whose activations go to host memory during forward and come back for
    # backward (Megatron --cpu-offloading-num-layers); priced on the cluster's host link.
    offload_layers: int = 0
    # Modules of every layer whose inputs go to host memory in forward and come back for backward (Megatron
    # --fine-grained-activation-offloading --offload-modules; OFFLOAD_MODULES); priced on the host link.
    offload_modules: tuple[str, ...] = ()
    # The optimizer's states and master weights (this GPU's shard) copied to host memory after each optimizer step
    # and back before the next (Megatron-LM dev's --offload-optimizer-states, #2987; step.py
    # optimizer_offload_seconds and memory_breakdown): off the GPU during forward and backward.
    offload_optimizer_states: bool = False
    # Parameters kept in the low-precision format (Megatron --fp8-param-gather, --fp4-param-gather): no
    # 16-bit weight copy, and the parameter all-gathers move quantized data.
    lowp_param_gather: bool = False
    # The attention core's matmuls in FP8 too (Transformer Engine's fp8_dot_product_attention, which
    # Megatron-Bridge sets from its config; Megatron-LM's CLI has no flag for it).
    fp8_attention: bool = False
    # Adam's states: "fp32" (master weights, momentum, variance: 12 B per parameter), or "bf16" as
    # Megatron's precision-aware optimizer keeps them (--use-precision-aware-optimizer, --exp-avg-dtype
    # and --exp-avg-sq-dtype bf16: bf16 moments, and the fp32 master weights stored as the 16 bits the
    # bf16 weights lack, store_param_remainders; 6 B).
    optimizer_states: str = "fp32"
    # Under recompute "selective", the modules replayed in backward (RECOMPUTE_MODULES).
    recompute_modules: tuple[str, ...] = ("core_attn",)
    # Expert-parallel all-to-alls of one micro-batch overlapped with another's compute (Megatron
    # --overlap-moe-expert-parallel-comm, the 1F1B A2A overlap).
    ep_overlap: bool = False
    # Token dispatch: "alltoall" (NCCL all-to-all, one message per routed copy) or "deepep" (DeepEP /
    # HybridEP through Megatron's flex dispatcher: a token crosses the network once per remote NVLink
    # domain that holds one of its experts, and is forwarded to them inside it; costmodel/moe.py).
    ep_dispatch: str = "alltoall"
    # Wire format of the tokens an MoE layer sends to its experts (the forward dispatch) and of the
    # gradients sent back to them (the backward of the combine): "bf16", or "mxfp8" (E4M3 elements with
    # one byte of scale per 32, quantized before the exchange whatever the experts' own precision:
    # Megatron-LM's --moe-dispatch-fwd-dtype / --moe-combine-bwd-dtype mxfp8). The combine's forward and
    # the dispatch's backward stay bf16, as in DeepSeek-V3 (arXiv:2412.19437 Sec 3.3: FP8 dispatch, BF16
    # combine). Only the bytes on the links are priced, not the quantizing (or, for experts that are not
    # MXFP8, dequantizing) pass on each side. DISPATCH_DTYPES.
    ep_dispatch_dtype: str = "bf16"
    # The MoE layers' router and dispatch preprocessing captured in CUDA graphs (Megatron
    # --cuda-graph-impl transformer_engine with the moe_router and moe_preprocess scopes): no host
    # synchronisation per MoE layer (Efficiency.moe_host_sync_seconds) with a fixed-buffer dispatcher; the
    # all-to-all dispatcher still waits for its split sizes (stage.host_synced_dispatch).
    moe_cuda_graphs: bool = False
    # The whole forward-backward of a step (every micro-batch, not the optimizer) captured as one CUDA
    # graph and replayed (Megatron --cuda-graph-impl full_iteration): no per-layer kernel launches from the
    # host (Efficiency.layer_overhead_seconds, stage.layer_overhead_seconds) and no host synchronisation
    # (stage.host_synced_dispatch).
    full_iteration_graph: bool = False
    # Each transformer layer's forward and backward captured as CUDA graphs and replayed (Megatron-core's
    # per-layer graphs: --cuda-graph-impl local, enable_cuda_graph; NeMo's LAYER_CUDA_GRAPH): no kernel launches
    # from the host inside a layer (stage.layer_overhead_seconds), the layers' order and the step's host work
    # otherwise as without. Dense layers only (rules: an MoE layer's capture and host syncs are not modelled;
    # moe_cuda_graphs prices the router and dispatch graphs).
    layer_cuda_graphs: bool = False
    # The routed experts' activation runs Megatron-core's prologue to its fused quick-GEGLU
    # (fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl, core_v0.15.0 to core_v0.19.0): the model's
    # clamp as eager ops (moe.prologue_bytes) and the linear offset made a GPU tensor from a Python float at
    # each call, a blocking copy that waits for the GPU (stage.moe_sync_seconds). Not a choice but a fact of the
    # stack's code: one value per framework and model in the search, like rope_fusion (planner/frameworks).
    moe_act_prologue: bool = False
    # The experts' grouped GEMMs take each expert's token count as a device tensor (torch._grouped_mm's offsets:
    # torchtitan's GroupedExperts), so an MoE layer without expert parallelism has nothing to wait for on the
    # host; Megatron-core's (Transformer Engine's GroupedLinear m_splits) takes them as a host list, which its
    # dispatcher copies back even at ep 1 (stage.host_synced_dispatch). A fact of the stack's code, like
    # moe_act_prologue: one value per framework in the search.
    expert_sizes_on_device: bool = False
    cp: int = 1  # context parallel: the sequence split over cp ranks (2 x cp load-balanced chunks)
    cp_comm: str = "p2p"  # how CP ranks exchange K/V (CP_COMMS)
    # What the pipeline runtime holds between stages besides the layers' activations: "freed"
    # (Megatron-core frees each sent output) or "per_microbatch" (torch.distributed.pipelining: an
    # activation and a gradient receive buffer per micro-batch, kept across steps); PIPELINE_BUFFERS.
    pipeline_buffers: str = "freed"
    # When and where the gradients are reduced (GRAD_SYNCS): "buckets" as the last micro-batch's
    # backward produces them, in place in the gradient buffer (DDP, Megatron's distributed optimizer,
    # FSDP2 without a pipeline); "chunk_end" once per pipeline chunk after its last backward, into new
    # shard storage: FSDP2 under torch.distributed.pipelining, which accumulates unsharded gradients
    # and reduce-scatters them in post_backward (pipelining/stage.py backward_maybe_with_nosync and
    # _post_backward; fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce). ZeRO-1 only. "microbatch":
    # without ZeRO, an all-reduce after every micro-batch's backward into reduced gradients (DDP, or
    # FSDP2's replicate axis, never told to skip the sync: torchtitan's trainer calls no no_sync nor
    # set_requires_gradient_sync). ZeRO 0 only: ZeRO-2/3 reduce every micro-batch whatever this says.
    grad_sync: str = "buckets"
    # Elements of each reduce bucket the runtime copies gradients into for their reduction, beside the gradients
    # themselves (DeepSpeed ZeRO's contiguous_gradients buckets: planner/frameworks/deepspeed.py
    # grad_bucket_elements); 0 where gradients are reduced where they are (Megatron-core's gradient buffer,
    # FSDP2). Its bytes: dataparallel.staging_bucket_bytes. A fact of the runtime, set per framework.
    grad_bucket_elements: int = 0
    # The dense layers' projections as the stack's model code writes them (PROJECTIONS): "fused" (Megatron-core's
    # linear_qkv, one QKV GEMM, and linear_fc1, gate and up in one GEMM), "fused_qkv" (one QKV GEMM, gate and up
    # two: torchtitan's Llama since its fuse_qkv default, whose FeedForward keeps w1 and w3) or "separate" (wq, wk,
    # wv, w1, w3: torchtitan's Llama before it, models/llama3/model.py @820504e), where a grouped-query model's K
    # and V projections are num_kv_heads x head_dim / tp wide. Routed and shared experts keep moe.py's shapes (one
    # gate/up GEMM), and per-op recompute of an MoE layer one QKV GEMM (rules.py refuses it with "separate").
    projections: str = "fused"
    # How ranks are numbered (RANK_ORDERS, innermost first; topology.py): Megatron-LM's default "tp-cp-dp-pp",
    # data-parallel neighbours next to each other, or "tp-cp-pp-dp" (--use-tp-pp-dp-mapping), the stages of a
    # pipeline next to each other, so that a replica fills an NVLink domain and the data-parallel group spans them.
    rank_order: str = "tp-cp-dp-pp"
    # K and V repeated to the query heads before attention (a grouped-query model run through an
    # attention kernel without GQA: torchtitan's llama until it passed enable_gqa, repeat_kv), so the
    # saved K/V and the context-parallel exchange carry num_attention_heads heads, not num_kv_heads.
    repeat_kv: bool = False
    # Sequence parallel's QKV and MLP inputs saved for backward gathered, whole on every TP rank
    # (DTensor's redistribute before the column-parallel linears: torchtitan), rather than as the
    # sequence shard that Megatron's linears all-gather again in backward (memory.layer_activation_bytes).
    sp_gathered: bool = False
    ep: int = 1  # expert parallel: routed experts split over ep ranks
    etp: int = 1  # expert tensor parallel: each expert's matrices split over etp ranks

    @property
    def num_gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def expert_dp(self) -> int:
        """Expert data parallel: the ranks holding the same experts, tp x cp x dp / (etp x ep)."""
        return max(1, self.tp * self.cp * self.dp // (self.etp * self.ep))

    @property
    def grad_accum_steps(self) -> int:
        return self.global_batch_size // (self.micro_batch_size * self.dp)

    @property
    def num_microbatches(self) -> int:
        """Micro-batches each pipeline (each DP replica) runs per optimizer step."""
        return self.grad_accum_steps

    @property
    def replayed_modules(self) -> tuple[str, ...]:
        """The modules recompute replays module by module: recompute_modules under selective, none else."""
        return self.recompute_modules if self.recompute == "selective" else ()

    @property
    def grad_comm_dtype(self) -> str:
        """Gradient wire dtype: as given, else the 16-bit type the model trains in (fp16 under fp16,
        bf16 under bf16 and fp8, whose parameters are bf16), fp32 when training in fp32."""
        if self.grad_dtype:
            return self.grad_dtype
        return {"fp32": "fp32", "fp16": "fp16"}.get(self.precision, "bf16")


def plan_with(plan: Plan, changes: Mapping[str, object]) -> Plan:
    """dataclasses.replace(plan, **changes) without the generated __init__ (replace() costs about 17 us a plan;
    the search builds tens of thousands): the plan's fields with `changes` over them, which must name Plan
    fields, and no cached hash (_cached_hash) of `plan` carried over. tests/test_search_space.py checks it
    equals replace()."""
    out = object.__new__(Plan)
    state = out.__dict__
    state.update(plan.__dict__)
    state.pop("_hash", None)
    state.update(changes)
    return out


@dataclass(frozen=True)
class Efficiency:
    """Physical efficiency figures: achievable fraction of nominal rates, latencies, overheads.

    Defaults are measurements from the literature (sources in each comment), except those
    marked FITTED: planner/validation/fit.py fits them on all rows of validation/runs.yaml at once
    (`planner validate --fit-on all`; the objective weighs every source group the same), starting
    from measured priors. Constants only some rows inform are fitted on those: FlashAttention's
    Blackwell fraction on the Blackwell rows, the MoE host sync on the MoE rows (the others do not
    read them).
    """

    # Large-GEMM efficiency per generation, for GPUs whose catalog row has no measurement of its own
    # (compute.large_gemm_fraction): measured max achievable bf16 matmul / dense peak (stas00/
    # ml-engineering accelerator table: A100 271.2/312, H100 794.5/989; Blackwell: the mean of the
    # measured parts, B200 0.776, GB200 0.729, B300 0.786; CDNA3: the mean of MI300X 668.4/1300 = 0.514 and
    # MI325X 784.9/1300 = 0.604; CDNA4: MI355X 1565/2500, its one measured part). Ada has no measured part: it
    # takes the nearest measured generation's, Hopper's (the same fourth-generation tensor cores and FP8
    # formats; catalogs/gpus.yaml L40S notes). Hopper BF16 rows come out 7-10% fast with it (README, "Out of
    # sample"): a short best-of-shapes figure on a power-limited part; kept, as no source gives a sustained rate.
    # A generation absent here (volta, cdna2, other) has no basis: its GPUs need a measured rate of their own.
    matmul_peak_fraction: dict[str, float] = field(
        default_factory=lambda: {"ampere": 0.87, "hopper": 0.80, "blackwell": 0.764, "ada": 0.80, "cdna3": 0.559,
                                 "cdna4": 0.626}
    )
    # FP8 GEMMs reach a smaller fraction of their (2x) peak: Azure AI-benchmarking-guide cuBLASLt FP8
    # GEMM, ND H100 v5 1382 of 1979 TFLOP/s (32768^3); Blackwell: the mean of the measured fp8 MAMF of
    # B200 0.763, GB200 0.723, B300 0.745 (catalogs/gpus.yaml, stas00 table); Ada: Hopper's, as above. A
    # generation with no low-precision GEMM measured (CDNA3, CDNA4: no fp8 MAMF published) is absent: its
    # parts take their own bf16 fraction (compute.large_gemm_fraction).
    fp8_matmul_peak_fraction: dict[str, float] = field(
        default_factory=lambda: {"hopper": 0.70, "blackwell": 0.744, "ada": 0.70}
    )
    # Multiplies both tables above; 1.0 = the published figures. Set per cluster from timed steps
    # (Cluster.matmul_efficiency_scale, `planner calibrate --step-times`), applied in stage.stage_cost.
    matmul_efficiency_scale: float = 1.0
    # A fused attention kernel's achieved fraction of the 16-bit dense peak on the FLOPs it does (causal
    # half) at long sequences, by GPU generation and kernel (compute.flash_attention_fraction). For
    # generations without their own figure: FlashAttention-2 on H100, Azure AI-benchmarking-guide ND H100
    # v5, 327.9 TFLOP/s (hd 128, seq 8192) = 0.33 of 989; measured, not fitted ...
    flash_attention_peak_fraction: float = 0.33
    # ... FITTED with the others below: cuDNN's fused attention on Hopper, prior 631.3 TFLOP/s = 0.64 of
    # 989 (pytorch#142132: H100, torch 2.6.0.dev20241204, batch 1, 24 heads, seq 4608, hd 128) ...
    flash_attention_peak_fraction_cudnn_hopper: float = 0.4858
    # ... (FlashAttention-2-class kernels on Hopper run at this share of cuDNN's rate, measured, not
    # fitted: SDPA's flash backend 329.5 against 631.3 TFLOP/s on the same shape, pytorch#142132; so the
    # Hopper rows of either kernel fit one fraction) ...
    flash2_over_cudnn_hopper: float = 329.5 / 631.3
    # ... either kernel on Ampere, where the two perform alike: prior 136.4 TFLOP/s = 0.44 of 312
    # (pytorch PR #192799's sm80 forward benchmark: cuDNN 135.4, flash 136.4) ...
    flash_attention_peak_fraction_ampere: float = 0.4663
    # ... Blackwell's kernels (cuDNN / Transformer Engine fused attention built for its tensor cores),
    # either kernel name; prior 0.33 ...
    flash_attention_peak_fraction_blackwell: float = 0.3306
    # ... and the sequence length at which each reaches half of its fraction (prior one 128-row tile).
    # The fitted values give, at s = 8192: cuDNN's on H100 320 TFLOP/s, FlashAttention-2's 167, A100 97,
    # B200 496: about half of what the kernels reach alone in benchmarks, the rest being work around
    # the kernel that the rows' steps include and the model does not count (layout copies, RoPE, GQA).
    # 4096 is the fit's upper bound (planner/validation/fit.py FIT_BOUNDS): the bound, not the rows, sets it.
    flash_attention_half_seq: float = 4096.0
    # ... measured on the part each generation's fitted fraction stands for: its fused-attention kernel rate
    # as fractions of its bf16 peak, (forward, backward) (compute.attention_rate_scale; a part with its own
    # measurement, Gpu.attention_fraction, runs attention at the ratio of the two). Blackwell: GB200 in NVIDIA
    # cudnn-frontend's SDPA training benchmark (benchmark/sdpa_benchmark_training/results/llama3.1/gb200/
    # llama3.1_20260424_100750.csv @ fb682ce7, cuDNN 9.22; bf16, causal, head dim 128, 64 query / 8 KV heads,
    # batch 2, 8,192 tokens), 1574 / 1332 TFLOP/s of 2500. Measured, not fitted.
    attention_reference_fraction: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"blackwell": (1574 / 2500, 1332 / 2500)}
    )
    # FP8 attention (Transformer Engine's fp8 dot-product attention, cuDNN's FP8 SDPA) over the same kernel
    # in bf16, (forward, backward), for parts without a measurement of their own (compute.
    # fp8_attention_speedup): GB200's, the part the Blackwell fraction stands for, in NVIDIA cudnn-frontend's
    # SDPA training benchmark (benchmark/sdpa_benchmark_training/artifacts/sdpa_fp8_benchmark_results_NVIDIA_
    # GB200.csv @ d48a60eb: causal, head dim 128, 128 query / 8 KV heads, batch 1, 8,192 tokens; fp8 1894 /
    # 1263 TFLOP/s against bf16 1583 / 1211 in the same run). Measured, not fitted. Hopper parts have their own
    # (H200 measured, 1.50x forward and 0.79x backward: catalogs/gpus.yaml); B300, which has no FP8 SDPA
    # benchmark at this shape, takes this one (its bf16 rate is derived from GB300's, catalogs/gpus.yaml).
    fp8_attention_speedup: tuple[float, float] = (1894 / 1583, 1263 / 1211)
    # FITTED (planner/fit.py, `planner validate --fit-on all`, all rows of validation/runs.yaml):
    # GEMM output dimension at which efficiency is half its large-shape value (saturation) ...
    matmul_half_dim: float = 383.0
    # ... fraction of HBM bandwidth reached by elementwise / normalisation kernels ...
    hbm_efficiency: float = 0.7022
    # NCCL bus bandwidth / nominal, measured (shared/validation nccl_bandwidth): NVLink rings reach
    # 231.6/300 on 8 A100 (Azure ND A100 v4) and 370/450 on H100 (nccl-tests #212); a 400G NDR NIC
    # gives 46-48 of 50 GB/s (nccl-tests #290). The seed article's 70-80% is the cautious bound.
    nvlink_efficiency: float = 0.80
    network_efficiency: float = 0.94
    # Without RDMA traffic is staged through host memory: the seed article says cost "doubles".
    no_rdma_bandwidth_factor: float = 0.5
    # Per ring step. Fit of t = 2(n-1) alpha + S_bus/B to the Azure ND A100 v4 all_reduce busbw curve
    # (8 GPUs: 109 GB/s at 16 MB, 231.6 GB/s at 8 GB): alpha = (257 - 121 us) / 14 = 9.7 us.
    nvlink_latency_seconds: float = 10e-6
    # Per ring step crossing the network: NCCL's own tuning constant for a network ring step with
    # the Simple protocol (src/graph/tuning.cc @5067397c, hwLatencies[NET][RING][SIMPLE] = 14 us);
    # `planner calibrate` replaces it with a cluster's measured value.
    network_latency_seconds: float = 14e-6
    # Fraction of the DP/ZeRO sync that can hide behind backward compute when overlap is on.
    dp_overlap_fraction: float = 1.0
    # Compute seconds lost per second a collective runs beside it (costmodel/overlap.py). MEASURED, not
    # fitted (benchmarks/overlap_contention.py on an H200 at its power limit, 2026-12-04): four Llama 3 8B
    # layers' forward-backward beside a kernel holding 16 or 32 NCCL-like blocks (512 threads, one per
    # channel), waiting as a network collective's do or copying 0.7-1.5 TB/s of HBM as an NVLink ring's
    # do, each launched first and outlasting the step or ending inside it: 0.10-0.28, mean 0.19 of the 8
    # cases (16 blocks 0.10-0.20, 32 blocks 0.14-0.28). Lee et al. 2025 (arXiv 2507.03114) report compute
    # slowed 18.9% on average by overlapped collectives on 4 A100/H100/MI250/MI210 (0.16 lost). Was 0.12,
    # a prior (16 of 132 SMs), until then.
    collective_sm_share: float = 0.19
    # Routed rows on the busiest expert-parallel rank over the balanced share (costmodel/moe.py): 1.0
    # as NVIDIA's benchmarks force balanced routing; a what-if for real routers, not fitted.
    moe_routing_imbalance: float = 1.0
    # Per MoE layer and micro-batch when its dispatch is not CUDA-graphed: the router's token counts
    # copied to the host (Megatron's dispatchers size the all-to-all from them, a stream sync) drain the
    # GPU's queue, which then waits for the host to launch the layer's remaining kernels. FITTED on the
    # MoE rows (planner/validation/fit.py); prior 0.
    moe_host_sync_seconds: float = 0.002709
    # Per layer and micro-batch (forward + backward): kernel launches and stream synchronisation
    # the roofline does not see (FITTED as above).
    layer_overhead_seconds: float = 0.0003992
    # Fixed per-step cost outside the model: optimizer launch, logging, data loading.
    step_overhead_seconds: float = 0.0
    # Framework memory not in the analytic terms: CUDA context, NCCL buffers, allocator slack.
    memory_overhead_bytes: float = 2.0 * 2**30
    # Caching-allocator slack: reserved bytes (what published peaks such as torchtitan's
    # reserved_bytes.all.peak measure) over the analytic allocation, as a fraction of the bytes a
    # step allocates and frees (step.step_allocated_bytes). FITTED (planner/validation/fit.py
    # fit_memory) on the 11 validation rows that publish a peak: 0.0775, memory MAPE 3.15% (0.06 of
    # all bytes gave 3.14% before 2026-12-01, when the slack still grew with the kept model states).
    memory_fragmentation_fraction: float = 0.0775
