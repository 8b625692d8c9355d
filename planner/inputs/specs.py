"""Input specs at the YAML edge (human units in key names), validated with pydantic.

Unknown keys are rejected; every error names the field. Counts are strict integers and quantities
finite numbers, each within the bounds of planner/inputs/limits.py; names are one printable line.
`to_*` methods convert to the cost model's SI dataclasses.
"""
from __future__ import annotations

import math
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from costmodel import types as cm
from costmodel.compute import power_capped_clock_fraction
from planner import SCHEMA_VERSION
from planner.inputs import limits as L
from planner.inputs.fields import Flag, Name, Text, count, quantity

GIB = 2**30


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MoeSpec(Spec):
    """A routed mixture-of-experts MLP (costmodel/types.py Moe); expert MLPs use the model's `mlp`."""

    num_experts: count(L.MAX_EXPERTS)
    experts_per_token: count(L.MAX_EXPERTS)  # top-k
    ffn_hidden_size: count(4 * L.MAX_HIDDEN)  # one routed expert's intermediate width
    shared_ffn_hidden_size: count(16 * L.MAX_HIDDEN, lower=0) = 0  # all shared experts together
    first_dense_layers: count(L.MAX_LAYERS, lower=0) = 0
    layer_freq: count(L.MAX_LAYERS) = 1
    capacity_factor: Optional[quantity(L.MAX_CAPACITY_FACTOR)] = None  # absent: dropless
    # How the router weighs a token's k experts: what a launch must state to train this model; the cost
    # model prices every router alike (its work is one h x experts GEMM and a top-k). topk_softmax: a
    # softmax over the k chosen logits (Mixtral, Qwen3-MoE, gpt-oss; Megatron-core's default);
    # softmax_topk: a softmax over all experts, the k weights not renormalised (Qwen2-MoE, DeepSeek-V2;
    # moe_router_pre_softmax); sigmoid: sigmoid scores, renormalised over the k when k > 1 (DeepSeek-V3,
    # Llama 4; moe_router_score_function).
    router: Literal["topk_softmax", "softmax_topk", "sigmoid"] = "topk_softmax"
    router_expert_bias: Flag = False  # a balancing bias added to the scores to choose (aux-loss-free, DeepSeek-V3)
    router_groups: count(L.MAX_EXPERTS, lower=0) = 0  # group-limited routing: experts in equal groups ...
    router_group_topk: count(L.MAX_EXPERTS, lower=0) = 0  # ... a token's k taken from this many of them
    router_scaling_factor: quantity(L.MAX_ROUTER_SCALE) = 1.0  # multiplies the k weights (DeepSeek-V3: 2.5)
    # the router's weight scales the expert's input, not its output (Llama 4's Llama4TextMoe; Megatron-core
    # moe_apply_probs_on_input, which takes top-1 routing only: moe/experts.py @d98e8a64)
    router_probs_on_input: Flag = False
    # a learned sigmoid gate per token scales the shared experts' output (Qwen2-MoE's shared_expert_gate, a
    # Linear(h, 1); Megatron-core moe_shared_expert_gate): h weights a layer, neither counted nor priced; a
    # launch must state it
    shared_expert_gate: Flag = False
    # The load-balancing auxiliary loss a launch states (Megatron --moe-aux-loss-coeff, whose default 0 trains
    # with none): its coefficient (Hugging Face router_aux_loss_coef, DeepSeek's aux_loss_alpha) and whether it
    # is taken per micro-batch (GShard / Switch; Megatron aux_loss) or per sequence (DeepSeek's seq_aux;
    # seq_aux_loss). Absent: the model gives none. Not priced (a few reductions of a layer's router scores).
    aux_loss_coeff: Optional[quantity(L.MAX_AUX_LOSS_COEFF, positive=False)] = None
    aux_loss_scope: Literal["micro_batch", "sequence"] = "micro_batch"

    @model_validator(mode="after")
    def _routing(self) -> "MoeSpec":
        if self.num_experts < 2:
            raise ValueError(f"num_experts must be >= 2 for a mixture of experts (got {self.num_experts})")
        if self.experts_per_token > self.num_experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) exceeds num_experts ({self.num_experts})")
        if self.experts_per_token == 1 and self.router == "topk_softmax":
            raise ValueError("router topk_softmax with experts_per_token 1 weighs every token 1.0 and gives the router "
                             "no gradient: use softmax_topk (Switch Transformer) or sigmoid (Llama 4)")
        if self.router_expert_bias and self.router != "sigmoid":
            raise ValueError("router_expert_bias needs router: sigmoid (DeepSeek-V3's aux-loss-free balancing)")
        if self.router_probs_on_input and self.experts_per_token != 1:
            raise ValueError("router_probs_on_input scales one expert's input: it needs experts_per_token 1 (Llama 4)")
        if self.shared_expert_gate and not self.shared_ffn_hidden_size:
            raise ValueError("shared_expert_gate gates the shared experts: it needs shared_ffn_hidden_size")
        if self.capacity_factor is not None and self.capacity_factor < 1:
            raise ValueError(f"capacity_factor {self.capacity_factor:g} is below 1: experts padded to it drop tokens "
                             "even under balanced routing, work planner's FLOP count (every routed copy through its "
                             "experts) would still credit, so MFU could pass 100%")
        return self._groups()

    def _groups(self) -> "MoeSpec":
        g, top = self.router_groups, self.router_group_topk
        if bool(g) != bool(top):
            raise ValueError("router_groups and router_group_topk go together (group-limited routing)")
        if g and self.num_experts % g:
            raise ValueError(f"num_experts ({self.num_experts}) must be divisible by router_groups ({g})")
        if g and top > g:
            raise ValueError(f"router_group_topk ({top}) exceeds router_groups ({g})")
        if g and self.experts_per_token > top * (self.num_experts // g):
            raise ValueError(f"experts_per_token ({self.experts_per_token}) exceeds the experts of router_group_topk "
                             f"({top}) groups")
        return self

    def to_moe(self) -> cm.Moe:
        return cm.Moe(self.num_experts, self.experts_per_token, self.ffn_hidden_size, self.shared_ffn_hidden_size,
                      self.first_dense_layers, self.layer_freq, self.capacity_factor or 0.0,
                      self.router_probs_on_input)


class MlaSpec(Spec):
    """Multi-head latent attention (costmodel/types.py Mla)."""

    q_lora_rank: count(L.MAX_HIDDEN, lower=0) = 0  # 0: queries projected straight from the hidden state
    kv_lora_rank: count(L.MAX_HIDDEN)
    qk_nope_head_dim: count(L.MAX_HIDDEN)
    qk_rope_head_dim: count(L.MAX_HIDDEN)
    v_head_dim: count(L.MAX_HIDDEN)

    def to_mla(self) -> cm.Mla:
        return cm.Mla(self.q_lora_rank, self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim,
                      self.v_head_dim)


# Each RoPE scaling kind's parameters besides its factor, by Hugging Face's keys (modeling_rope_utils.py
# _validate_*_parameters): what RopeScalingSpec takes and what hf_rope.py reads from a config.json.
ROPE_SCALING_PARAMETERS = {
    "yarn": ("original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"),
    "llama3": ("original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
    "linear": (),
}


class RopeScalingSpec(Spec):
    """How RoPE's frequencies are rescaled (Hugging Face config.json `rope_scaling`, `rope_parameters` in
    Transformers v5; the keys and defaults of transformers/modeling_rope_utils.py). The cost model prices
    no kind differently; a launch must state it to train this model (planner/emit), and Megatron-LM runs a
    YaRN model's RoPE unfused (planner/frameworks/megatron.py). yarn: Peng et al. 2023, "YaRN" (arXiv:2309.00071)
    Sec 3.2-3.4, frequencies interpolated by `factor` below the wavelengths between beta_slow and beta_fast
    rotations of the original context (rounded to whole dimensions unless `truncate` is false), attention
    logits scaled by mscale / mscale_all_dim (DeepSeek's form) or 0.1 ln(factor) + 1; llama3: Llama 3.1's
    smooth blend of the frequencies whose wavelengths lie between original / high_freq_factor and
    original / low_freq_factor; linear: every position divided by `factor`."""

    rope_type: Literal["yarn", "llama3", "linear"]
    factor: quantity(1e6, 1.0)
    original_max_position_embeddings: Optional[count(L.MAX_SEQ_LENGTH)] = None  # yarn and llama3: required
    beta_fast: Optional[quantity(1e6)] = None  # yarn; absent: 32
    beta_slow: Optional[quantity(1e6)] = None  # yarn; absent: 1
    mscale: Optional[quantity(1e3)] = None  # yarn, DeepSeek's attention scale
    mscale_all_dim: Optional[quantity(1e3, positive=False)] = None
    truncate: Flag = True  # yarn: the correction range rounded to whole dimensions (HF's default)
    low_freq_factor: Optional[quantity(1e6)] = None  # llama3
    high_freq_factor: Optional[quantity(1e6)] = None  # llama3

    @model_validator(mode="after")
    def _kind(self) -> "RopeScalingSpec":
        optional = {k for keys in ROPE_SCALING_PARAMETERS.values() for k in keys} - {"truncate"}
        given = {k for k in optional if getattr(self, k) is not None}
        allowed = set(ROPE_SCALING_PARAMETERS[self.rope_type]) - {"truncate"}
        needed = {"yarn": {"original_max_position_embeddings"}, "llama3": allowed, "linear": set()}[self.rope_type]
        if given - allowed:
            raise ValueError(f"{', '.join(sorted(given - allowed))} do not apply to rope_type {self.rope_type}")
        if needed - given:
            raise ValueError(f"rope_type {self.rope_type} needs {', '.join(sorted(needed - given))}")
        if not self.truncate and self.rope_type != "yarn":
            raise ValueError("truncate applies to rope_type yarn only")
        if self.rope_type == "llama3" and self.low_freq_factor > self.high_freq_factor:
            raise ValueError("llama3 rope scaling needs low_freq_factor at most high_freq_factor (equal: no blend)")
        return self

    def to_rope_scaling(self) -> cm.RopeScaling:
        return cm.RopeScaling(self.rope_type, self.factor, self.original_max_position_embeddings, self.beta_fast,
                              self.beta_slow, self.mscale, self.mscale_all_dim, self.truncate, self.low_freq_factor,
                              self.high_freq_factor)


class ModelSpec(Spec):
    name: Name
    num_layers: count(L.MAX_LAYERS)
    hidden_size: count(L.MAX_HIDDEN)
    num_attention_heads: count(L.MAX_HEADS)
    vocab_size: count(L.MAX_VOCAB)
    seq_length: count(L.MAX_SEQ_LENGTH)
    # Why seq_length is what it is where no source gives the training length (a catalog entry's assumption,
    # said as a note when a command takes it: loading.load_model_spec)
    seq_length_note: Optional[Text] = None
    num_kv_heads: Optional[count(L.MAX_HEADS)] = None
    ffn_hidden_size: Optional[count(4 * L.MAX_HIDDEN)] = None
    mlp: Literal[cm.MLPS] = "gelu"
    # gpt-oss's gated MLP: (up + offset) x the activated gate, the gate clamped above and up on both sides
    # at glu_clamp (the offset launch-only; the clamp priced where a stack runs it as eager ops,
    # cm.Plan.moe_act_prologue)
    glu_linear_offset: quantity(1e3, positive=False) = 0.0
    glu_clamp: Optional[quantity(1e6)] = None
    attention_sinks: Flag = False  # a learned logit per head joins each softmax (gpt-oss)
    tie_embeddings: Flag = False
    dropout: Flag = False
    normalization: Literal["layernorm", "rmsnorm"] = "layernorm"
    position_embedding: Literal["learned", "rope", "alibi", "none"] = "learned"
    rope_theta: Optional[quantity(1e12)] = None  # RoPE base frequency, with position_embedding: rope
    rope_scaling: Optional[RopeScalingSpec] = None  # absent: RoPE's frequencies as they are
    rotary_percent: quantity(1.0) = 1.0  # share of each head's dimensions RoPE rotates (Nemotron-4: 0.5)
    # every n-th layer (n-1, 2n-1, ...) without position encoding (Llama 4's NoPE layers; Megatron
    # --no-rope-freq); 0: none. A launch detail, like the norm's epsilon (absent: the framework's, 1e-5).
    nope_every: count(L.MAX_LAYERS, lower=0) = 0
    norm_epsilon: Optional[quantity(1e-2)] = None
    linear_bias: Flag = True
    qkv_bias: Flag = False
    head_dim: Optional[count(L.MAX_HIDDEN)] = None  # absent: hidden_size / num_attention_heads
    moe: Optional[MoeSpec] = None
    mla: Optional[MlaSpec] = None
    mtp_layers: count(L.MAX_MTP_LAYERS, lower=0) = 0  # multi-token prediction modules (DeepSeek-V3)
    attention_window: Optional[count(L.MAX_SEQ_LENGTH)] = None  # local attention span; absent: full
    global_attention_every: count(L.MAX_LAYERS, lower=0) = 0  # every n-th layer global; 0: all local
    window_kind: Literal["sliding", "chunked"] = "sliding"
    # norm of queries and keys: learned per head (the model's normalization: Qwen3, Gemma 3), learned over
    # all heads' queries and all heads' keys at once (OLMoE), l2 per head (Llama 4)
    qk_norm: Literal[cm.QK_NORMS] = "none"
    global_batch_size: Optional[count(L.MAX_BATCH)] = None
    training_tokens: Optional[quantity(L.MAX_TOKENS, L.MIN_TOKENS)] = None
    source: Optional[Text] = None
    notes: Optional[Text] = None

    @model_validator(mode="after")
    def _shapes(self) -> "ModelSpec":
        if self.hidden_size % self.num_attention_heads and not self.head_dim and not self.mla:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                             f"({self.num_attention_heads}), or head_dim given")
        if self.moe and self.moe.first_dense_layers >= self.num_layers:
            raise ValueError(f"moe.first_dense_layers ({self.moe.first_dense_layers}) leaves no MoE layer of "
                             f"{self.num_layers}")
        if self.moe and self.moe.layer_freq > self.num_layers:
            raise ValueError(f"moe.layer_freq ({self.moe.layer_freq}) exceeds num_layers ({self.num_layers})")
        dense_layers = not self.moe or self.moe.first_dense_layers or self.moe.layer_freq > 1
        if self.mlp in cm.GATED_MLPS and self.ffn_hidden_size is None and dense_layers:
            raise ValueError(f"ffn_hidden_size is needed with mlp {self.mlp}: a missing width means 4 x "
                             "hidden_size, the GeLU MLP's, which no gated model uses (Megatron-LM's default for "
                             "SwiGLU is 8/3 x hidden_size rounded down to a multiple of 64: arguments.py)")
        if self.global_attention_every and not self.attention_window:
            raise ValueError("global_attention_every needs attention_window")
        if (self.glu_linear_offset or self.glu_clamp) and self.mlp not in cm.GATED_MLPS:
            raise ValueError(f"glu_linear_offset and glu_clamp need a gated mlp (got {self.mlp})")
        if self.qk_norm != "none" and self.mla:
            raise ValueError("qk_norm is for multi-head and grouped-query attention; multi-head latent attention "
                             "(mla) has its latent norms already")
        if self.window_kind != "sliding" and not self.attention_window:
            raise ValueError("window_kind needs attention_window")
        kv = self.num_kv_heads or self.num_attention_heads
        if (self.rope_theta is not None or self.rotary_percent != 1.0 or self.nope_every or self.rope_scaling) \
                and self.position_embedding != "rope":
            raise ValueError("rope_theta, rope_scaling, rotary_percent and nope_every need position_embedding: rope")
        if self.nope_every and self.num_layers % self.nope_every:
            raise ValueError(f"nope_every ({self.nope_every}) must divide num_layers ({self.num_layers})")
        if self.num_attention_heads % kv:
            raise ValueError(f"num_attention_heads ({self.num_attention_heads}) must be divisible by "
                             f"num_kv_heads ({kv})")
        return self

    def to_model(self) -> cm.Model:
        return cm.Model(
            name=self.name, num_layers=self.num_layers, hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads, vocab_size=self.vocab_size,
            seq_length=self.seq_length, num_kv_heads=self.num_kv_heads or 0,
            ffn_hidden_size=self.ffn_hidden_size or 0, mlp=self.mlp,
            tie_embeddings=self.tie_embeddings, dropout=self.dropout, normalization=self.normalization,
            position_embedding=self.position_embedding, rope_theta=self.rope_theta or 0.0,
            rope_scaling=self.rope_scaling.to_rope_scaling() if self.rope_scaling else None,
            rotary_percent=self.rotary_percent,
            linear_bias=self.linear_bias, qkv_bias=self.qkv_bias, attention_head_dim=self.head_dim or 0,
            moe=self.moe.to_moe() if self.moe else None, mla=self.mla.to_mla() if self.mla else None,
            mtp_layers=self.mtp_layers, attention_window=self.attention_window or 0,
            global_attention_every=self.global_attention_every, window_kind=self.window_kind,
            qk_norm=self.qk_norm, attention_sinks=self.attention_sinks, glu_clamp=self.glu_clamp or 0.0,
            norm_epsilon=self.norm_epsilon or 0.0, nope_every=self.nope_every,
        )


# The GPU generations with a measured large-GEMM rate the cost model takes for a part without its own
# (costmodel Efficiency.matmul_peak_fraction, compute.large_gemm_fraction), read once.
GEMM_RATE_GENERATIONS = frozenset(cm.Efficiency().matmul_peak_fraction)


def power_cap_refusal(gpu, watts: float) -> str | None:
    """Why `gpu` (a catalog GpuSpec or a cost-model Gpu) cannot be capped at `watts`: no rated power to cap,
    or a cap below L.MIN_POWER_FRACTION of it; None when it can. The one home of the floor: GpuSpec's
    power_limit_watts and --what-if power= (analysis/whatif.py, sizing) both ask it."""
    if not gpu.tdp_watts:
        return f"GPU {gpu.name} has no tdp_watts in its spec"
    floor = L.MIN_POWER_FRACTION * gpu.tdp_watts
    if watts < floor:
        return (f"below {floor:g} W, {L.MIN_POWER_FRACTION:g} of {gpu.name}'s {gpu.tdp_watts:g} W "
                f"({L.MIN_POWER_FRACTION_SOURCE})")
    return None


class GpuSpec(Spec):
    name: Name
    vendor: Literal["nvidia", "amd", "intel", "google", "other"] = "nvidia"
    generation: Literal["volta", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4", "other"]
    memory_gib: quantity(L.MAX_MEMORY_GIB, L.MIN_MEMORY_GIB)
    # Dense peaks per tensor-core format; a precision the GPU has no entry for is one it cannot train in
    # (mxfp8, mxfp4 and nvfp4: block-scaled formats with hardware scaling, Blackwell and CDNA4; fp4 is the
    # FP4 tensor rate that nvfp4 and mxfp4 take where the spec gives no rate of their own).
    dense_tflops: dict[Literal["fp32", "tf32", "bf16", "fp16", "fp8", "mxfp8", "fp4", "mxfp4", "nvfp4"],
                       quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)]
    hbm_bandwidth_gbytes_per_s: quantity(L.MAX_HBM_GBYTES_PER_S, L.MIN_HBM_GBYTES_PER_S)
    nvlink_bandwidth_gbytes_per_s: quantity(L.MAX_NVLINK_GBYTES_PER_S, L.MIN_LINK_GBYTES_PER_S, positive=False) = 0.0
    # A board meshed point to point (AMD xGMI): one peer link's bandwidth per direction; absent for a switched
    # fabric (NVSwitch). A group of k of the board's GPUs reaches k - 1 such links (costmodel topology.nvlink_link).
    peer_link_gbytes_per_s: Optional[quantity(L.MAX_NVLINK_GBYTES_PER_S, L.MIN_LINK_GBYTES_PER_S)] = None
    # Measured maximum achievable matmul throughput (MAMF: the best large GEMM), per format; the cost
    # model's large-GEMM fraction of peak for this GPU. Without a measurement the generation's value
    # from its measured parts applies (costmodel/types.py Efficiency).
    measured_matmul_bf16_tflops: Optional[quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)] = None
    measured_matmul_fp8_tflops: Optional[quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)] = None
    # For a part with no MAMF of its own: a measured part's MAMF times the ratio of the two parts' rates
    # in one benchmark that ran both (a derivation, not a measurement; the row's notes give the rule and
    # the benchmark). Used as the measured figure would be; not allowed beside one.
    derived_matmul_bf16_tflops: Optional[quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)] = None
    derived_matmul_fp8_tflops: Optional[quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)] = None
    # Exponentials per second of the special-function units (SMs x exp2 results per clock per SM x
    # boost clock): what softmax in attention runs on. 0/absent = not modelled for this GPU.
    exp_tops: Optional[quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)] = None
    # Measured fused-attention kernel throughput (bf16) at the shape costmodel/types.py
    # Efficiency.attention_reference_fraction names, forward and backward; absent = not measured.
    measured_attention_bf16_tflops: Optional[dict[Literal["forward", "backward"],
                                                  quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)]] = None
    # For a part with no attention benchmark at that shape: a measured part's rate times the ratio of the
    # two parts' rates in one benchmark that ran both (as derived_matmul_*; the notes give the rule).
    derived_attention_bf16_tflops: Optional[dict[Literal["forward", "backward"],
                                                 quantity(L.MAX_TFLOPS, L.MIN_TFLOPS)]] = None
    # The same kernel's measured FP8 rate over its bf16 rate in one run, forward and backward (dimensionless);
    # absent = Efficiency.fp8_attention_speedup (costmodel/compute.py fp8_attention_speedup).
    measured_attention_fp8_over_bf16: Optional[dict[Literal["forward", "backward"], quantity(4.0, 0.25)]] = None
    tdp_watts: Optional[quantity(L.MAX_WATTS, L.MIN_WATTS)] = None  # rated board power the peaks hold at
    power_limit_watts: Optional[quantity(L.MAX_WATTS, L.MIN_WATTS)] = None  # a lower cap the GPU runs under
    source: Optional[Text] = None
    verified: Optional[Flag] = None
    notes: Optional[Text] = None

    @model_validator(mode="after")
    def _peaks(self) -> "GpuSpec":
        if "bf16" not in self.dense_tflops and "fp16" not in self.dense_tflops:
            raise ValueError("dense_tflops needs at least a bf16 or fp16 entry")
        if self.power_limit_watts is not None and self.tdp_watts is None:
            raise ValueError("power_limit_watts needs tdp_watts (the board power the peaks are rated at)")
        why = power_cap_refusal(self, self.power_limit_watts) if self.power_limit_watts is not None else None
        if why:
            raise ValueError(f"power_limit_watts {self.power_limit_watts:g}: {why}")
        own_bf16 = self.measured_matmul_bf16_tflops or self.derived_matmul_bf16_tflops
        if not own_bf16 and self.generation not in GEMM_RATE_GENERATIONS:
            raise ValueError(f"no GEMM rate measured on a {self.generation} GPU for the cost model to take: give "
                             "measured_matmul_bf16_tflops (the best large bf16 GEMM measured on this GPU)")
        for fmt in ("bf16", "fp8"):
            if getattr(self, f"measured_matmul_{fmt}_tflops") and getattr(self, f"derived_matmul_{fmt}_tflops"):
                raise ValueError(f"derived_matmul_{fmt}_tflops beside measured_matmul_{fmt}_tflops: give one")
        for kind in ("measured", "derived"):
            rates = getattr(self, f"{kind}_attention_bf16_tflops")
            if rates is not None and len(rates) != 2:
                raise ValueError(f"{kind}_attention_bf16_tflops needs both forward and backward")
        if self.measured_attention_bf16_tflops and self.derived_attention_bf16_tflops:
            raise ValueError("derived_attention_bf16_tflops beside measured_attention_bf16_tflops: give one")
        if self.measured_attention_fp8_over_bf16 is not None and len(self.measured_attention_fp8_over_bf16) != 2:
            raise ValueError("measured_attention_fp8_over_bf16 needs both forward and backward")
        return self

    def to_gpu(self) -> cm.Gpu:
        table = {k: v * 1e12 for k, v in self.dense_tflops.items()}
        table.setdefault("bf16", table.get("fp16", 0.0))
        table.setdefault("fp16", table["bf16"])
        return cm.Gpu(
            name=self.name, memory_bytes=self.memory_gib * GIB, dense_flops_per_second=table,
            hbm_bandwidth_bytes_per_second=self.hbm_bandwidth_gbytes_per_s * 1e9,
            nvlink_bandwidth_bytes_per_second=self.nvlink_bandwidth_gbytes_per_s * 1e9,
            generation=self.generation,
            peer_link_bytes_per_second=(self.peer_link_gbytes_per_s or 0.0) * 1e9,
            tensor_clock_fraction=power_capped_clock_fraction(self.power_limit_watts or 0.0, self.tdp_watts or 0.0),
            tdp_watts=self.tdp_watts or 0.0,
            matmul_fraction=self.measured_fractions(table),
            exp_per_second=(self.exp_tops or 0.0) * 1e12,
            attention_fraction=self.attention_fraction(table["bf16"]),
            attention_fp8_speedup=tuple(self.measured_attention_fp8_over_bf16[k] for k in ("forward", "backward"))
            if self.measured_attention_fp8_over_bf16 else (),
        )

    def attention_fraction(self, bf16_peak: float) -> tuple[float, ...]:
        """The measured (or derived) attention kernel rate as fractions of the bf16 peak, (forward, backward),
        or ()."""
        measured = self.measured_attention_bf16_tflops or self.derived_attention_bf16_tflops
        if not measured or bf16_peak <= 0:
            return ()
        return tuple(min(1.0, measured[k] * 1e12 / bf16_peak) for k in ("forward", "backward"))

    def measured_fractions(self, table: dict[str, float]) -> dict[str, float]:
        """Large-GEMM fraction of the dense peak, per format with a measurement (or a derivation from one)."""
        out = {}
        for precision in ("bf16", "fp8"):
            measured = (getattr(self, f"measured_matmul_{precision}_tflops")
                        or getattr(self, f"derived_matmul_{precision}_tflops"))
            if measured and table.get(precision):
                out[precision] = min(1.0, measured * 1e12 / table[precision])
        return out


class CalibrationSpec(Spec):
    """Where a cluster file's measured figures came from (written by `planner calibrate`)."""

    date: Text
    tool: Text = "planner calibrate"
    base: Optional[Text] = None  # the cluster file or catalog name that was calibrated
    nccl_logs: list[Text] = []
    # an earlier calibration's logs, where this one left a link tier it fitted as it was
    earlier_nccl_logs: list[Text] = []
    min_message_bytes: Optional[count(2**50)] = None
    step_times: Optional[Text] = None
    matmul_efficiency_scale_stderr: Optional[quantity(1e3, positive=False)] = None
    notes: Optional[Text] = None


class ClusterSpec(Spec):
    name: Name
    gpu: Name | GpuSpec
    num_gpus: Optional[count(L.MAX_GPUS)] = None
    gpus_per_node: count(L.MAX_GPUS_PER_NODE) = 8
    nvlink_domain_size: Optional[count(L.MAX_GPUS_PER_NODE)] = None
    nvlink_bandwidth_gbytes_per_s: Optional[quantity(L.MAX_NVLINK_GBYTES_PER_S, L.MIN_LINK_GBYTES_PER_S, positive=False)] = None
    network_bandwidth_gbits_per_s: quantity(L.MAX_NETWORK_GBITS_PER_S, L.MIN_NETWORK_GBITS_PER_S)
    rdma: Flag = True
    # Measured (e.g. nccl-tests busbw, see `planner calibrate`): used instead of nominal x efficiency.
    nvlink_busbw_gbytes_per_s: Optional[quantity(L.MAX_NVLINK_GBYTES_PER_S, L.MIN_LINK_GBYTES_PER_S)] = None
    network_busbw_gbytes_per_s: Optional[quantity(L.MAX_NETWORK_GBITS_PER_S / 8, L.MIN_LINK_GBYTES_PER_S)] = None
    nvlink_latency_us: Optional[quantity(L.MAX_LATENCY_US, positive=False)] = None
    network_latency_us: Optional[quantity(L.MAX_LATENCY_US, positive=False)] = None
    # Measured (timed steps, `planner calibrate --step-times`): multiplies the achievable matmul efficiency.
    matmul_efficiency_scale: Optional[quantity(L.MAX_EFFICIENCY_SCALE, L.MIN_EFFICIENCY_SCALE)] = None
    # GPU <-> host memory per GPU, one direction (PCIe Gen5 x16: 64; Grace NVLink-C2C: more), for offload.
    host_link_gbytes_per_s: Optional[quantity(L.MAX_NVLINK_GBYTES_PER_S, L.MIN_LINK_GBYTES_PER_S)] = None
    calibrated_from: Optional[CalibrationSpec] = None
    usd_per_gpu_hour: Optional[quantity(L.MAX_USD_PER_GPU_HOUR, L.MIN_USD_PER_GPU_HOUR, positive=False)] = None
    price_kind: Optional[Literal["on-demand", "reserved", "spot"]] = None
    price_date: Optional[Text] = None
    price_source: Optional[Text] = None
    source: Optional[Text] = None
    verified: Optional[Flag] = None
    notes: Optional[Text] = None

    @model_validator(mode="after")
    def _links(self) -> "ClusterSpec":
        if self.nvlink_bandwidth_gbytes_per_s == 0 and (self.nvlink_domain_size or 1) > 1:
            raise ValueError(f"nvlink_domain_size {self.nvlink_domain_size} needs nvlink_bandwidth_gbytes_per_s > 0 "
                             "(0 means the GPUs have no NVLink)")
        network = self.network_bandwidth_gbits_per_s / 8
        for busbw, key, nominal in ((self.network_busbw_gbytes_per_s, "network_bandwidth_gbits_per_s", network),
                                    (self.nvlink_busbw_gbytes_per_s, "nvlink_bandwidth_gbytes_per_s",
                                     self.nvlink_bandwidth_gbytes_per_s)):
            if busbw and nominal and busbw > L.MAX_BUSBW_OVER_NOMINAL * nominal:
                raise ValueError(f"measured bus bandwidth {busbw:g} GB/s is over {L.MAX_BUSBW_OVER_NOMINAL:g}x the "
                                 f"{nominal:g} GB/s of {key}: one of the two is not this cluster's")
        domain = self.nvlink_domain_size
        if domain and domain % self.gpus_per_node and self.gpus_per_node % domain:
            raise ValueError(f"nvlink_domain_size {domain} must divide gpus_per_node ({self.gpus_per_node}: NVLink "
                             "pairs or islands in a node) or be whole nodes (an NVL72 rack of 4-GPU trays)")
        return self

    def implausible(self, gpu: GpuSpec) -> list[str]:
        """Warnings for values far outside any shipped part (limits.PLAUSIBLE), naming the field."""
        values = {"network_bandwidth_gbits_per_s": self.network_bandwidth_gbits_per_s,
                  "nvlink_bandwidth_gbytes_per_s": self.nvlink_bandwidth_gbytes_per_s
                  if self.nvlink_bandwidth_gbytes_per_s is not None else gpu.nvlink_bandwidth_gbytes_per_s,
                  "hbm_bandwidth_gbytes_per_s": gpu.hbm_bandwidth_gbytes_per_s, "memory_gib": gpu.memory_gib}
        out = []
        for key, value in values.items():
            limit, why = L.PLAUSIBLE[key]
            if value > limit:
                out.append(f"{self.name}: {key} {value:g} is {why}")
        return out

    def to_cluster(self, gpu: GpuSpec, num_gpus: int) -> cm.Cluster:
        nvlink = self.nvlink_bandwidth_gbytes_per_s
        if nvlink is None:
            nvlink = gpu.nvlink_bandwidth_gbytes_per_s
        domain = self.nvlink_domain_size or (self.gpus_per_node if nvlink > 0 else 1)
        return cm.Cluster(
            name=self.name, gpu=gpu.to_gpu(), num_gpus=num_gpus, gpus_per_node=self.gpus_per_node,
            nvlink_domain_size=domain, nvlink_bandwidth_bytes_per_second=nvlink * 1e9,
            network_bandwidth_bytes_per_second=self.network_bandwidth_gbits_per_s * 1e9 / 8,
            rdma=self.rdma, usd_per_gpu_hour=self.usd_per_gpu_hour or 0.0,
            nvlink_busbw_bytes_per_second=(self.nvlink_busbw_gbytes_per_s or 0.0) * 1e9,
            network_busbw_bytes_per_second=(self.network_busbw_gbytes_per_s or 0.0) * 1e9,
            nvlink_latency_seconds=(self.nvlink_latency_us or 0.0) * 1e-6,
            network_latency_seconds=(self.network_latency_us or 0.0) * 1e-6,
            matmul_efficiency_scale=self.matmul_efficiency_scale or 1.0,
            host_link_bytes_per_second=(self.host_link_gbytes_per_s or 0.0) * 1e9,
        )


class PlanSpec(Spec):
    """A plan as users and `--json` write it."""

    tp: count(L.MAX_DEGREE) = 1
    pp: count(L.MAX_DEGREE) = 1
    dp: Optional[count(L.MAX_DEGREE)] = None
    cp: count(L.MAX_DEGREE) = 1
    cp_comm: Literal["p2p", "all_gather", "all_gather_saved", "a2a", "a2a+p2p"] = "p2p"
    # stage-boundary buffers the pipeline runtime keeps (costmodel memory.pipeline_buffer_units)
    pipeline_buffers: Literal["freed", "per_microbatch"] = "freed"
    # when gradients are reduced: in buckets during backward, or per pipeline chunk after it (costmodel Plan.grad_sync)
    grad_sync: Literal["buckets", "chunk_end", "microbatch"] = "buckets"
    # elements of each reduce bucket the runtime stages gradients through (costmodel Plan.grad_bucket_elements)
    grad_bucket_elements: count(L.MAX_GRAD_BUCKET_ELEMENTS, lower=0) = 0
    repeat_kv: Flag = False  # K/V repeated to the query heads before attention (costmodel Plan.repeat_kv)
    sp_gathered: Flag = False  # sequence parallel's QKV/MLP inputs saved gathered (costmodel Plan.sp_gathered)
    # the dense projections as one GEMM each for QKV and gate/up, or separate GEMMs (costmodel Plan.projections);
    # absent: fused, or under per-op recompute (torchtitan's only) torchtitan's fused_qkv (plans.projections_of)
    projections: Optional[Literal[cm.PROJECTIONS]] = None
    # how ranks are numbered, innermost first (costmodel Plan.rank_order; Megatron --use-tp-pp-dp-mapping)
    rank_order: Literal[cm.RANK_ORDERS] = "tp-cp-dp-pp"
    ep: count(L.MAX_DEGREE) = 1
    etp: count(L.MAX_DEGREE) = 1
    vpp: count(L.MAX_LAYERS) = 1
    micro_batch_size: count(L.MAX_BATCH) = 1
    global_batch_size: Optional[count(L.MAX_BATCH)] = None
    grad_accum_steps: Optional[count(L.MAX_BATCH)] = None
    zero_stage: count(3, lower=0) = 0
    recompute: Literal["none", "selective", "op", "full"] = "none"
    # what selective recompute replays (Megatron --recompute-modules)
    recompute_modules: list[Literal[cm.RECOMPUTE_MODULES]] = Field(
        default=["core_attn"], min_length=1, max_length=len(cm.RECOMPUTE_MODULES))
    ep_overlap: Flag = False  # expert-parallel all-to-alls overlapped with another micro-batch's compute
    ep_dispatch: Literal["alltoall", "deepep"] = "alltoall"  # deepep: DeepEP/HybridEP (Megatron flex)
    ep_dispatch_dtype: Literal["bf16", "mxfp8"] = "bf16"  # wire format towards the experts (Plan.ep_dispatch_dtype)
    moe_cuda_graphs: Flag = False  # MoE router and dispatch preprocessing in CUDA graphs
    full_iteration_graph: Flag = False  # the whole forward-backward as one CUDA graph (Megatron full_iteration)
    layer_cuda_graphs: Flag = False  # each dense layer's forward and backward as CUDA graphs (Megatron local)
    optimizer_states: Literal["fp32", "bf16"] = "fp32"  # bf16: Megatron's precision-aware optimizer
    fp8_attention: Flag = False  # the attention core in FP8 (Transformer Engine fp8_dot_product_attention)
    attention_kernel: Literal[cm.ATTENTION_KERNELS] = "cudnn"  # fused attention kernel (Plan.attention_kernel)
    sequence_parallel: Flag = False
    precision: Literal[cm.PRECISIONS] = "bf16"
    fp8_recipe: Literal["delayed", "tensorwise", "rowwise", "blockwise"] = "delayed"
    bf16_layers_start: count(L.MAX_LAYERS, lower=0) = 0
    bf16_layers_end: count(L.MAX_LAYERS, lower=0) = 0
    weight_casts: Literal["step", "use"] = "step"
    zero3_reshard: Flag = True
    tp_comm_overlap: Flag = False
    # the backward's column-parallel TP collectives beside the GEMMs (costmodel Plan.tp_async_grad)
    tp_async_grad: Flag = True
    offload_layers: count(L.MAX_LAYERS, lower=0) = 0
    # under recompute full, the layers of each model chunk recomputed, the first ones (costmodel Plan.recompute_layers)
    recompute_layers: count(L.MAX_LAYERS, lower=0) = 0
    # modules whose inputs Megatron's fine-grained activation offload moves to host memory
    offload_modules: list[Literal[cm.OFFLOAD_MODULES]] = Field(default=[], max_length=len(cm.OFFLOAD_MODULES))
    # the optimizer's states and master weights in host memory between steps (costmodel Plan.offload_optimizer_states)
    offload_optimizer_states: Flag = False
    lowp_param_gather: Flag = False
    grad_dtype: Optional[Literal["fp32", "bf16", "fp16", "int8"]] = None
    overlap_dp_comm: Flag = True
    overlap_pp_comm: Flag = True
    flash_attention: Flag = True
    fused_elementwise: Flag = True
    # RoPE as one fused kernel (costmodel Plan.rope_fusion); absent: as the model's stack applies it
    # (plans.rope_fusion_of)
    rope_fusion: Optional[Flag] = None
    # The experts' activation runs Megatron-core's eager prologue, which waits on the host (costmodel
    # Plan.moe_act_prologue); absent: as the model's stack runs it (plans.moe_act_prologue_of)
    moe_act_prologue: Optional[Flag] = None
    # The experts' grouped GEMMs read their token counts on the device, so an MoE layer at ep 1 never waits on the
    # host (costmodel Plan.expert_sizes_on_device: torchtitan); false: as Megatron-core, which copies them back
    expert_sizes_on_device: Flag = False
    # how the loss runs over the logits (costmodel Plan.cross_entropy); files of schema 24 and older wrote
    # fused_cross_entropy instead (false: the eager loss), which _legacy_loss reads
    cross_entropy: Literal[cm.CROSS_ENTROPY] = "vocab_parallel_fused"
    zero3_gather_unit: Literal["layer", "tensor"] = "layer"
    grad_reduce: Literal["reduce_scatter", "allreduce"] = "reduce_scatter"
    # layers per model chunk; a chunk may hold none (Megatron's pipeline layouts: "...|mL" holds only
    # the MTP block and the loss) as long as every pipeline rank holds one
    stage_layers: Optional[list[count(L.MAX_LAYERS, lower=0)]] = Field(default=None, max_length=L.MAX_LAYERS)

    @model_validator(mode="before")
    @classmethod
    def _legacy_loss(cls, data):
        """A plan written before schema 25 says fused_cross_entropy: false for the eager loss, true for the rest."""
        if not isinstance(data, dict) or "fused_cross_entropy" not in data:
            return data
        data = dict(data)
        fused = data.pop("fused_cross_entropy")
        if not isinstance(fused, bool):
            raise ValueError(f"fused_cross_entropy: expected true or false, got {fused!r}")
        if not fused:
            data.setdefault("cross_entropy", "eager")
        return data


class TrainingRecord(BaseModel):
    """The `training` object of an estimate (time and dollars to train the model's tokens)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    training_tokens: Optional[quantity(L.MAX_TOKENS, L.MIN_TOKENS)] = None
    steps: Optional[count(int(L.MAX_TOKENS))] = None
    time_to_train_s: Optional[quantity(L.MAX_DAYS * 86400 * 1e3, positive=False)] = None
    usd_to_train: Optional[quantity(L.MAX_USD * 1e3, positive=False)] = None


class EstimateRecord(BaseModel):
    """An estimate object read back (`planner estimate --json`, one plan of `suggest --json`), for
    `compare` and `emit`. Its other keys are kept as they are; the ones these commands read are
    checked like any input."""

    model_config = ConfigDict(extra="allow", frozen=True)

    # every contract version this planner has written, up to planner.SCHEMA_VERSION
    schema_version: Optional[Literal[tuple(str(v) for v in range(1, int(SCHEMA_VERSION) + 1))]] = None
    model: Optional[Name] = None
    model_spec: Optional[dict] = None  # read as a ModelSpec by emit (planner/commands/emit.py model_for)
    cluster: Optional[Name] = None
    gpu: Optional[Name] = None
    num_gpus: Optional[count(L.MAX_GPUS)] = None
    gpus_per_node: Optional[count(L.MAX_GPUS_PER_NODE)] = None
    nvlink_domain_size: Optional[count(L.MAX_GPUS)] = None
    seq_length: Optional[count(L.MAX_SEQ_LENGTH)] = None
    plan: PlanSpec
    step_time_s: Optional[quantity(L.MAX_SECONDS)] = None
    tokens_per_s: Optional[quantity(1e15)] = None
    mfu: Optional[quantity(1.0)] = None
    hfu: Optional[quantity(2.0)] = None
    memory_per_gpu_bytes: Optional[quantity(L.MAX_MEMORY_GIB * GIB * 1e3)] = None
    memory_capacity_bytes: Optional[quantity(L.MAX_MEMORY_GIB * GIB)] = None
    fits: Optional[Flag] = None
    time_breakdown_s: Optional[dict[Name, quantity(L.MAX_SECONDS, positive=False)]] = None
    memory_breakdown_bytes: Optional[dict[Name, quantity(L.MAX_MEMORY_GIB * GIB * 1e3, positive=False)]] = None
    usd_per_gpu_hour: Optional[quantity(L.MAX_USD_PER_GPU_HOUR, positive=False)] = None
    usd_per_step: Optional[quantity(L.MAX_USD, positive=False)] = None
    training: Optional[TrainingRecord] = None

    @model_validator(mode="after")
    def _gpus(self) -> "EstimateRecord":
        p = self.plan
        if self.num_gpus is not None and p.dp is not None and p.tp * p.cp * p.pp * p.dp != self.num_gpus:
            raise ValueError(f"num_gpus {self.num_gpus} is not the plan's tp x cp x pp x dp = "
                             f"{p.tp}x{p.cp}x{p.pp}x{p.dp}")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> "EstimateRecord":
        """The identities every estimate planner writes holds (planner/analysis/score.py to_dict): the step
        is the sum of its time parts (dp_comm, the whole DP sync, is listed beside its exposed part), the
        memory the sum of its parts, tokens/s the batch's tokens over the step (emit reads the
        sequence length so), and fits memory <= capacity. A file that breaks one was edited, and compare would rank it on numbers no model gave."""
        checks = []
        if self.step_time_s is not None and self.time_breakdown_s is not None:
            parts = sum(v for k, v in self.time_breakdown_s.items() if k != "dp_comm")
            checks.append(("time_breakdown_s", parts, "step_time_s", self.step_time_s))
        if self.memory_per_gpu_bytes is not None and self.memory_breakdown_bytes is not None:
            checks.append(("memory_breakdown_bytes", sum(self.memory_breakdown_bytes.values()), "memory_per_gpu_bytes",
                           self.memory_per_gpu_bytes))
        for name, value, of, expected in checks:
            if not math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-9):
                raise ValueError(f"{name} gives {value:.6g}, not the {of} {expected:.6g}: the estimate was edited "
                                 "(re-run `planner estimate --json`)")
        gbs = self.plan.global_batch_size
        if None not in (self.tokens_per_s, self.step_time_s, self.seq_length, gbs):
            per_sequence = self.tokens_per_s * self.step_time_s / gbs
            if not math.isclose(per_sequence, self.seq_length, rel_tol=1e-6):
                raise ValueError(f"tokens_per_s x step_time_s / global batch gives {round(per_sequence)} tokens per "
                                 f"sequence, not its seq_length {self.seq_length}: the estimate was edited")
        if None not in (self.fits, self.memory_per_gpu_bytes, self.memory_capacity_bytes):
            if self.fits != (self.memory_per_gpu_bytes <= self.memory_capacity_bytes):
                raise ValueError(f"fits {str(self.fits).lower()} contradicts memory_per_gpu_bytes "
                                 f"{self.memory_per_gpu_bytes:.6g} against memory_capacity_bytes "
                                 f"{self.memory_capacity_bytes:.6g}: the estimate was edited")
        return self
