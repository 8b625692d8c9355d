"""The JSON output contract: what every command prints with `--json`, as pydantic models.

Each command prints one JSON object (`planner.commands.common.print_json`) with `schema_version`
first; OUTPUTS maps the command to the model of that object, field by field, each with a one-line
description (units are in the key names: *_s seconds, *_bytes bytes, *_usd and usd_* US dollars,
*_gib GiB, *_gbytes_per_s 1e9 B/s, *_us microseconds). A key that may be null is typed `X | None`
and always present; a key that is only present when it applies (and never null) is `omitted(...)`.

The models are the source of a JSON Schema (2020-12) shipped in the package as
planner/commands/contract.schema.json: one document with a definition per command under `$defs`,
a top-level `oneOf` over them, and `x-commands` naming the definition of each command. After a
change to the models (or to the costmodel/spec vocabularies they reuse: precisions, recompute
modes, GPU generations, ...), regenerate it with

    python -m planner.commands.contract --write

`--check` exits 1 when the shipped file differs from the models (tests/test_contract.py checks this
too); with neither flag the schema is printed.

SCHEMA_VERSION is defined in planner/__init__.py (print_json stamps it without loading these
models) and re-exported here. Bump it with every change to the models: the schema is exact
(no other keys allowed), so even an added key makes new output fail the old schema.
"""
from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from costmodel import types as cm
from planner.analysis.accuracy import FP8_SCALINGS, KINDS
from planner.commands.common import SCHEMA_VERSION
from planner.inputs import specs

SCHEMA_FILE = "contract.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def d(description: str) -> Any:
    """A key that is always present (possibly null when typed `X | None`)."""
    return Field(description=description)


def _drop_default(schema: dict) -> None:
    schema.pop("default", None)


def omitted(description: str) -> Any:
    """A key that is present only when it applies: absent otherwise, never null."""
    return Field(default=None, description=description, json_schema_extra=_drop_default)


def spec_type(spec: type[BaseModel], name: str) -> Any:
    """The type of an input spec's field without its Optional, so that input and output share one
    vocabulary (e.g. the GPU generations a catalog row may name)."""
    annotation = spec.model_fields[name].annotation
    if get_origin(annotation) in (Union, UnionType):
        return next(a for a in get_args(annotation) if a is not type(None))
    return annotation


Recompute = Literal[cm.RECOMPUTE_MODES]
CpComm = Literal[cm.CP_COMMS]
RecomputeModule = Literal[cm.RECOMPUTE_MODULES]
OffloadModule = Literal[cm.OFFLOAD_MODULES]
WindowKind = Literal[cm.WINDOW_KINDS]
QkNorm = Literal[cm.QK_NORMS]
Precision = Literal[cm.PRECISIONS]
GradDtype = Literal[cm.GRAD_DTYPES]
Mlp = Literal[cm.MLPS]
Generation = spec_type(specs.GpuSpec, "generation")
Router = spec_type(specs.MoeSpec, "router")
PriceKind = spec_type(specs.ClusterSpec, "price_kind")
Normalization = spec_type(specs.ModelSpec, "normalization")
PositionEmbedding = spec_type(specs.ModelSpec, "position_embedding")


class Strict(BaseModel):
    """An object of the output: exactly these keys, values of exactly these types."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Output(Strict):
    """A top-level object, as one command prints it."""

    schema_version: Literal[SCHEMA_VERSION] = d("version of this JSON contract (planner/commands/contract.py)")


# --- the estimate object (planner/analysis/score.py to_dict), shared by estimate, suggest, size ---


class Plan(Strict):
    """A parallel plan (planner/inputs/plans.py plan_to_dict); `planner emit` and PlanSpec read it back."""

    tp: int = d("tensor-parallel degree")
    pp: int = d("pipeline-parallel stages")
    dp: int = d("data-parallel degree")
    cp: int = d("context-parallel degree: each sequence split over cp GPUs (1 = none)")
    cp_comm: CpComm = d("how context-parallel ranks exchange keys and values")
    ep: int = d("expert-parallel degree (1 for dense models)")
    etp: int = d("expert tensor-parallel degree (1 for dense models)")
    vpp: int = d("virtual pipeline stages per rank (interleaving; 1 = none)")
    zero_stage: int = d("ZeRO stage, 0-3")
    micro_batch_size: int = d("sequences per micro-batch")
    global_batch_size: int = d("sequences per optimizer step")
    grad_accum_steps: int = d("micro-batches per data-parallel rank per step")
    recompute: Recompute = d("activation recomputation: none, Megatron selective, torchtitan per-op, or full")
    recompute_layers: int = d("under recompute full, the layers of each model chunk recomputed (the first ones; "
                              "Megatron --recompute-method block); 0: every layer")
    recompute_modules: list[RecomputeModule] = d("what selective recompute replays (Megatron --recompute-modules)")
    ep_overlap: bool = d("expert-parallel all-to-alls overlapped with another micro-batch's compute")
    ep_dispatch: Literal["alltoall", "deepep"] = d("MoE token dispatch: NCCL all-to-all, or DeepEP/HybridEP")
    ep_dispatch_dtype: Literal["bf16", "mxfp8"] = d("wire format of the tokens sent to the experts (forward) and of "
                                                    "the gradients sent back to them (backward); the other direction "
                                                    "stays bf16")
    moe_cuda_graphs: bool = d("MoE router and dispatch preprocessing in CUDA graphs (no host sync per MoE layer with "
                            "ep_dispatch deepep)")
    full_iteration_graph: bool = d("the whole forward-backward captured as one CUDA graph (no per-layer launch "
                                   "overhead, no host sync)")
    layer_cuda_graphs: bool = d("each dense layer's forward and backward captured as CUDA graphs (no launch "
                                "overhead inside a layer)")
    optimizer_states: Literal["fp32", "bf16"] = d("Adam states in fp32, or bf16 (Megatron's precision-aware optimizer)")
    fp8_attention: bool = d("the attention core's matmuls in FP8 (Transformer Engine fp8_dot_product_attention)")
    sequence_parallel: bool = d("Megatron sequence parallelism over the TP group")
    precision: Precision = d("training precision of the matmuls")
    grad_dtype: GradDtype = d("dtype gradients are reduced in (resolved: never empty)")
    overlap_dp_comm: bool = d("DP/ZeRO gradient sync overlaps backward compute")
    overlap_pp_comm: bool = d("pipeline p2p overlaps compute")
    flash_attention: bool = d("fused (FlashAttention) attention")
    fused_elementwise: bool = d("fused elementwise kernels")
    rope_fusion: bool = d("RoPE applied by one fused kernel (false: eager ops, Megatron-LM's for YaRN without MLA)")
    moe_act_prologue: bool = d("the experts' activation runs Megatron-core's fused quick-GEGLU prologue: the clamp as "
                               "eager ops and a host wait per forward pass")
    expert_sizes_on_device: bool = d("the experts' grouped GEMMs read their token counts on the GPU (torchtitan's "
                                     "torch._grouped_mm), so an MoE layer at ep 1 never waits on the host")
    cross_entropy: Literal[cm.CROSS_ENTROPY] = d(
        "how the loss runs over the logits: vocab_parallel_fused (Megatron's vocab-parallel loss compiled), "
        "vocab_parallel (eager), fused (kernels over the 16-bit logits), eager (F.cross_entropy on fp32-upcast logits)")
    zero3_gather_unit: Literal["layer", "tensor"] = d("ZeRO-3 all-gathers one layer at a time or one weight tensor")
    grad_reduce: Literal["reduce_scatter", "allreduce"] = d("how gradients are reduced under ZeRO")
    stage_layers: list[int] | None = d("layers per pipeline chunk as given; null: split evenly")
    fp8_recipe: Literal["delayed", "tensorwise", "rowwise", "blockwise"] = d("fp8 scaling recipe (with precision fp8)")
    bf16_layers_start: int = d("transformer layers kept 16-bit at the start of the stack under a low precision")
    bf16_layers_end: int = d("transformer layers kept 16-bit at the end of the stack under a low precision")
    weight_casts: Literal["step", "use"] = d("low-precision weight casts cached per step or made at every use")
    zero3_reshard: bool = d("ZeRO-3 frees gathered weights after forward (false: kept until backward)")
    tp_comm_overlap: bool = d("TP collectives decomposed and overlapped with the GEMMs beside them")
    tp_async_grad: bool = d("without that overlap, the backward's column-parallel TP collectives run beside the "
                            "weight- and input-gradient GEMMs (Megatron-LM, Transformer Engine)")
    offload_layers: int = d("layers per pipeline stage whose activations go to host memory")
    offload_modules: list[OffloadModule] = d("modules whose inputs go to host memory (Megatron --offload-modules)")
    offload_optimizer_states: bool = d("the optimizer's states and master weights kept in host memory between "
                                       "optimizer steps (Megatron-LM dev --offload-optimizer-states)")
    lowp_param_gather: bool = d("parameters kept and all-gathered in the low-precision format")
    pipeline_buffers: Literal["freed", "per_microbatch"] = d(
        "stage-boundary buffers the pipeline runtime keeps: freed once sent (Megatron-core), or a receive "
        "buffer per micro-batch for activations and gradients (torch.distributed.pipelining, torchtitan)")
    sp_gathered: bool = d("sequence parallel's QKV and MLP inputs saved for backward gathered, whole on every TP "
                          "rank (DTensor, torchtitan), not as the shard Megatron re-gathers in backward")
    grad_sync: Literal["buckets", "chunk_end", "microbatch"] = d(
        "gradients reduced in buckets as the last backward produces them (in place); under ZeRO-1, once per "
        "pipeline chunk after its last backward into new shard storage (chunk_end: FSDP2 under "
        "torch.distributed.pipelining); under ZeRO 0, all-reduced after every micro-batch (microbatch)")
    grad_bucket_elements: int = d("elements of each reduce bucket the runtime copies gradients into for their "
                                  "reduction (DeepSpeed ZeRO), counted with the gradients; 0: reduced in place")
    projections: Literal[cm.PROJECTIONS] = d(
        "the dense projections as the model code writes them: QKV and gate/up one GEMM each (fused), QKV one and "
        "gate/up two (fused_qkv), or Q, K, V, gate and up each its own GEMM (separate)")
    rank_order: Literal[cm.RANK_ORDERS] = d(
        "how ranks are numbered, innermost first: tp-cp-dp-pp (Megatron-LM's default: data-parallel neighbours "
        "together) or tp-cp-pp-dp (--use-tp-pp-dp-mapping: a replica's pipeline stages together)")
    repeat_kv: bool = d("K/V repeated to the query heads before attention (attention without grouped-query "
                        "support): saved and exchanged at the query heads' width")
    attention_kernel: Literal[cm.ATTENTION_KERNELS] = d(
        "fused attention kernel: cuDNN's (Transformer Engine, current PyTorch SDPA), a FlashAttention-2-class one "
        "(they differ on Hopper), or FlashAttention-3 (Hopper only, priced as cuDNN's)")


class MoeShape(Strict):
    """A routed mixture-of-experts MLP (ModelSpec.moe)."""

    num_experts: int = d("routed experts per MoE layer")
    experts_per_token: int = d("experts each token is routed to (top-k)")
    ffn_hidden_size: int = d("one routed expert's intermediate size")
    shared_ffn_hidden_size: int = d("all shared experts' intermediate size together (0: none)")
    first_dense_layers: int = d("leading layers with a dense MLP")
    layer_freq: int = d("every layer_freq-th layer after those is MoE")
    capacity_factor: float = omitted("expert capacity over the balanced share; absent: dropless")
    router: Router = d("how the router weighs a token's experts")
    router_expert_bias: bool = d("a balancing bias added to the scores that choose the experts")
    router_groups: int = d("group-limited routing: expert groups (0: none)")
    router_group_topk: int = d("groups a token's experts come from (0: none)")
    router_scaling_factor: float = d("factor on the experts' weights")
    router_probs_on_input: bool = d("the router's weight scales the expert's input, not its output (Llama 4)")
    shared_expert_gate: bool = d("a learned sigmoid gate scales the shared experts' output (Qwen2-MoE)")
    aux_loss_coeff: float | None = d("the load-balancing loss coefficient a launch states (router_aux_loss_coef); "
                                     "null: the model gives none")
    aux_loss_scope: Literal["micro_batch", "sequence"] = d("the balancing loss per micro-batch (GShard) or per "
                                                           "sequence (DeepSeek's seq_aux)")


class MlaShape(Strict):
    """Multi-head latent attention (ModelSpec.mla)."""

    q_lora_rank: int = d("query latent rank (0: no query latent)")
    kv_lora_rank: int = d("key/value latent rank")
    qk_nope_head_dim: int = d("per-head query/key dimensions without position encoding")
    qk_rope_head_dim: int = d("per-head query/key dimensions with RoPE")
    v_head_dim: int = d("per-head value dimensions")


class RopeScalingShape(Strict):
    """How RoPE's frequencies are rescaled (ModelSpec.rope_scaling, Hugging Face's rope_scaling keys)."""

    rope_type: spec_type(specs.RopeScalingSpec, "rope_type") = d("yarn, llama3 (Llama 3.1's) or linear")
    factor: float = d("the scaling factor")
    original_max_position_embeddings: int = omitted("the context the frequencies were made for (yarn, llama3)")
    beta_fast: float = omitted("YaRN's fast-rotation bound; absent: 32")
    beta_slow: float = omitted("YaRN's slow-rotation bound; absent: 1")
    mscale: float = omitted("YaRN's attention scale (DeepSeek's form); absent: not given")
    mscale_all_dim: float = omitted("YaRN's attention scale over all dimensions; absent: not given")
    truncate: bool = d("YaRN's correction range rounded to whole dimensions")
    low_freq_factor: float = omitted("Llama 3.1's low-frequency factor")
    high_freq_factor: float = omitted("Llama 3.1's high-frequency factor")


class ModelShape(Strict):
    """The model an estimate was scored with (its ModelSpec; None values, batch and tokens left out)."""

    name: str = d("model name")
    num_layers: int = d("transformer layers")
    hidden_size: int = d("hidden size")
    num_attention_heads: int = d("attention heads")
    vocab_size: int = d("vocabulary size")
    seq_length: int = d("sequence length in tokens")
    num_kv_heads: int = omitted("key/value heads (grouped-query attention); absent: as many as attention heads")
    ffn_hidden_size: int = omitted("MLP hidden size; absent: the MLP's default (4h, or 8h/3 gated)")
    mlp: Mlp = d("MLP activation")
    glu_linear_offset: float = d("added to the gated MLP's up projection (gpt-oss: 1)")
    glu_clamp: float = omitted("gated MLP clamp (gpt-oss: 7); absent: none")
    attention_sinks: bool = d("a learned logit per head joins each attention softmax (gpt-oss)")
    tie_embeddings: bool = d("input and output embeddings share weights")
    dropout: bool = d("dropout layers present")
    normalization: Normalization = d("normalization layer")
    position_embedding: PositionEmbedding = d("position embedding")
    rope_theta: float = omitted("RoPE base frequency; absent when not given")
    rope_scaling: RopeScalingShape = omitted("RoPE's frequencies rescaled (YaRN, Llama 3.1's, linear); absent: not")
    rotary_percent: float = d("share of each head's dimensions RoPE rotates")
    nope_every: int = d("every n-th layer has no position encoding (Llama 4's NoPE layers; 0: none)")
    norm_epsilon: float = omitted("the norms' epsilon; absent: the framework's default (Megatron-LM 1e-5)")
    linear_bias: bool = d("linear layers carry biases")
    qkv_bias: bool = d("the QKV projection carries a bias")
    head_dim: int = omitted("per-head dimension when not hidden_size / heads")
    moe: MoeShape = omitted("the routed experts; absent for a dense model")
    mla: MlaShape = omitted("multi-head latent attention; absent for standard attention")
    mtp_layers: int = d("multi-token prediction modules")
    attention_window: int = omitted("local attention span in tokens; absent: full attention")
    global_attention_every: int = d("every n-th layer attends globally when windowed (0: all local)")
    window_kind: WindowKind = d("local attention as a sliding window or fixed chunks")
    qk_norm: QkNorm = d("norm of queries and keys: learned (the model's normalization, per head), "
                        "learned_all_heads (over all heads at once), l2 (per head) or none")


class TimeBreakdown(Strict):
    """Seconds per step by part; all but dp_comm add up to step_time_s."""

    compute: float = d("forward and backward matmuls and kernels of the slowest stage, all micro-batches")
    recompute: float = d("activation recomputation")
    tp_comm: float = d("tensor-parallel collectives")
    cp_comm: float = d("context-parallel key/value exchanges attention does not hide")
    ep_comm: float = d("expert-parallel token dispatch and combine")
    moe_sync: float = d("MoE layers waiting on the host for their token counts (all but DeepEP with MoE CUDA graphs, "
                        "whole-iteration graphs and, at ep 1, expert_sizes_on_device), and for the experts' "
                        "activation prologue (moe_act_prologue)")
    pp_comm: float = d("exposed pipeline p2p")
    offload: float = d("activation and optimizer-state copies to and from host memory that compute does not hide")
    pp_bubble: float = d("pipeline fill and drain")
    dp_comm_exposed: float = d("DP/ZeRO sync on the critical path")
    optimizer: float = d("optimizer update")
    overhead: float = d("fixed per-step overhead")
    dp_comm: float = d("whole DP/ZeRO sync, hidden or not (not part of the sum)")


class MemoryBreakdown(Strict):
    """Bytes on the fullest GPU by part; they add up to memory_per_gpu_bytes."""

    parameters: float = d("weights held")
    gradients: float = d("gradients held")
    optimizer_states: float = d("optimizer states (master weights, moments) held")
    activations: float = d("activations of the in-flight micro-batches")
    zero3_gather_buffers: float = d("ZeRO-3 gathered (current and prefetched) layer weights")
    overhead: float = d("framework, allocator and communication buffers")


class Training(Strict):
    """Time and dollars to train the model's training_tokens with this plan."""

    training_tokens: float = d("tokens to train on")
    steps: int = d("optimizer steps (the last partial batch counts)")
    time_to_train_s: float = d("steps x step_time_s")
    usd_to_train: float = d("steps x usd_per_step (0 on an unpriced cluster: usd_per_gpu_hour 0)")


class Estimate(Strict):
    """One plan scored by the cost model (planner/analysis/score.py to_dict)."""

    model: str = d("model name")
    model_spec: ModelShape = d("the model's shape, so the file alone can be emitted")
    cluster: str = d("cluster name")
    gpu: str = d("GPU name")
    num_gpus: int = d("GPUs the plan runs on")
    gpus_per_node: int = d("GPUs per node")
    nvlink_domain_size: int = d("GPUs sharing one NVLink domain (1: no NVLink)")
    seq_length: int = d("sequence length in tokens")
    plan: Plan = d("the plan")
    step_time_s: float = d("seconds per optimizer step")
    tokens_per_s: float = d("training tokens per second, whole job")
    parameters: int = d("weights of the model (all experts; multi-token prediction modules apart)")
    active_parameters: int = d("weights one token uses (its top-k experts), the input embedding included (OpenAI's "
                               "and DeepSeek's cards leave it out)")
    model_tflops_per_gpu: float = d("model TFLOP/s per GPU (no recompute; attention counted as the full s x s square)")
    mfu: float = d("model FLOPs utilisation against the precision's dense peak, attention counted as the full "
                   "s x s square (the papers' convention)")
    mfu_causal: float = d("MFU with attention counted causally (half the square; newer Megatron-Bridge tables)")
    hfu: float = d("hardware FLOPs utilisation (recompute counted)")
    memory_per_gpu_bytes: float = d("bytes on the fullest GPU")
    memory_capacity_bytes: float = d("bytes of memory per GPU")
    fits: bool = d("memory_per_gpu_bytes <= memory_capacity_bytes")
    time_breakdown_s: TimeBreakdown = d("step time by part")
    memory_breakdown_bytes: MemoryBreakdown = d("memory of the fullest GPU by part")
    pp_bubble_fraction: float = d("pipeline bubble's share of the step")
    stage_layers: list[int] = d("layers per pipeline chunk as scored")
    usd_per_gpu_hour: float = d("price per GPU-hour (0: unpriced)")
    usd_per_step: float = d("dollars per optimizer step (0 on an unpriced cluster: usd_per_gpu_hour 0, not free)")
    training: Training | None = d("totals for the model's training_tokens; null when the model has none")
    warnings: list[str] = d("warnings about the plan: the cost model's, and when no framework planner emits for runs it")


class Shares(Strict):
    """Each part's share of the step (they add up to 1)."""

    compute: float = d("compute share")
    recompute: float = d("recompute share")
    tp_comm: float = d("TP communication share")
    cp_comm: float = d("exposed CP exchange share")
    ep_comm: float = d("EP dispatch and combine share")
    moe_sync: float = d("MoE host synchronisation share")
    pp_comm: float = d("exposed PP p2p share")
    offload: float = d("exposed offload-to-host share")
    dp_comm_exposed: float = d("exposed DP/ZeRO sync share")
    pp_bubble: float = d("pipeline bubble share")
    optimizer: float = d("optimizer share")
    overhead: float = d("fixed overhead share")


class Lever(Strict):
    """A modified plan that helps, re-scored on the same cluster."""

    lever: str = d("what changes")
    caveat: str = d("what it costs")
    step_time_s: float = d("step time with the lever")
    per_sample_speedup: float = d("speed-up per sample against the plan, or for a lever of one framework against the "
                                  "plan as that framework runs it (baseline_step_time_s)")
    baseline_step_time_s: float = d("the step time the speed-up is against: the plan's, or for a lever of one "
                                    "framework the plan's as that framework runs it (its kernels, loss, runtime)")
    exposed_comm_share: float = d("exposed communication share with the lever")
    memory_per_gpu_bytes: float = d("bytes on the fullest GPU with the lever")
    usd_per_step: float = d("dollars per step with the lever")
    global_batch_size: int = d("sequences per step with the lever")
    plan: Plan = d("the whole plan the lever scored: every field it changed")


class Diagnosis(Strict):
    """Why the plan is slow and which levers help (planner/analysis/diagnose.py diagnosis_dict)."""

    shares: Shares = d("each part's share of the step")
    exposed_comm_share: float = d("exposed TP, CP, EP, PP and DP/ZeRO communication share of the step")
    threshold: float = d("share above which the plan counts as communication-bound")
    comm_bound: bool = d("exposed_comm_share > threshold")
    levers: list[Lever] = d("levers that help, fastest per sample first")


class EstimateWhatIf(Strict):
    """The plan re-scored under --what-if assumptions."""

    assumptions: str = d("the assumptions, e.g. 'network=0.5'")
    estimate: Estimate = d("the estimate under them")


class MfuEnvelope(Strict):
    """A plan's MFU against the highest measured for its kind of model on its GPU in its precision
    (planner/analysis/envelope.py)."""

    gpu: str = d("catalog GPU name")
    precision: str = d("the plan's precision")
    kind: Literal[KINDS] = d(
        "the plan's kind of model (a mixture of experts by its granularity, 4 x hidden over one expert's width: "
        "coarse below 2, fine from 2): the envelope holds only runs of that kind")
    published_mfu: float | None = d("highest MFU a scored validation row of this kind measured on this GPU in this "
                                    "precision (causal attention, as `mfu_causal`); null where no row ran it")
    run: str | None = d("that row's id; null where no row of the kind ran the GPU in the precision")
    file: str | None = d("the validation file that holds the row: runs.yaml or holdout.yaml (held out from every "
                         "fit); null where no row")
    source: str | None = d("its citation; null where no row")
    predicted_mfu: float = d("the plan's predicted MFU, causal attention (`mfu_causal`)")
    above: bool = d("predicted above every published run of its kind (always, where none was published on the GPU "
                    "in the precision): the cost model was never judged there")


class UnvalidatedSetting(Strict):
    """A plan setting whose value no published run on the GPU's generation used (planner/analysis/coverage.py)."""

    setting: str = d("the setting, e.g. tp_comm_overlap, recompute, interleaved_pipeline")
    value: str = d("the plan's value, lower case")
    generation: str = d("the GPU generation, e.g. ampere, hopper, blackwell")
    published_values: list[str] = d("the values scored rows of validation/runs.yaml and holdout.yaml used on "
                                    "that generation")


class ErrorStats(Strict):
    """Signed relative errors summarised; the statistics are null when n is 0."""

    n: int = d("rows")
    mape: float | None = d("mean absolute relative error")
    max_abs: float | None = d("largest absolute relative error")
    mean_signed: float | None = d("mean signed relative error")


class WorstRows(ErrorStats):
    """Relative errors of some scored validation rows (step time, or peak memory where named), with the worst of
    them (validation/host_wait_errors.yaml, validation/long_context_errors.yaml, validation/step_errors_by_gpu.yaml)."""

    worst_run: str | None = d("the row with the largest absolute error; null when n is 0")


class HostWait(Strict):
    """A plan whose MoE host wait is a large share of its step (planner/analysis/hostwait.py)."""

    share: float = d("the MoE host wait (time_breakdown_s.moe_sync) over the step time")
    threshold_share: float = d("the share from which a plan is judged host-bound")
    host_bound_rows: WorstRows = d("published MoE rows whose predicted host wait is at least that share")
    no_wait_rows: WorstRows = d("published MoE rows with no host wait, for contrast")


class LongContext(Strict):
    """A plan whose sequences are longer than any fitted run on its GPU generation
    (planner/analysis/longcontext.py)."""

    seq_length: int = d("the plan's sequence length, tokens")
    generation: str = d("the GPU generation, e.g. ampere, hopper, blackwell")
    fitted_max_seq_length: int = d("the longest sequence of a scored validation/runs.yaml row on that generation")
    kind: Literal["dense", "moe", "all"] = d("whose rows beyond_rows are: the plan's kind of model where any such row "
                                             "was judged, else all of them")
    beyond_rows: WorstRows = d("held-out rows (validation/holdout.yaml) on that generation that run longer, of `kind`; "
                               "n is 0 when none was judged")


class StepAccuracy(Strict):
    """The step-time errors of the published runs on a plan's GPU (else one of its generation), in its precision
    and fp8 scaling, of its kind of model, and the peak-memory errors of those that print a peak
    (planner/analysis/accuracy.py, validation/step_errors_by_gpu.yaml); mean_signed > 0: the model predicted their
    steps longer (peaks higher) than measured."""

    gpu: str = d("catalog GPU name of the rows: the plan's, or where none ran on it in this precision, scaling and "
                 "kind, the GPU of its generation with the most such rows")
    plan_gpu: str = d("catalog GPU name of the plan")
    precision: str = d("the plan's precision")
    fp8_scaling: Literal[FP8_SCALINGS] | None = d(
        "the plan's fp8 scaling, which the rows share: per-tensor (delayed or current scaling), rowwise or blockwise; "
        "null for other precisions")
    kind: Literal[KINDS] = d(
        "the kind of model the rows train: dense, or a mixture of experts by its granularity (4 x hidden over one "
        "expert's width: coarse below 2, fine from 2)")
    left_out: Literal["source", "model"] = d("what the out-of-sample fits left out of a runs.yaml row's fit: its "
                                              "source (dense rows) or its model (MoE rows, all from one source)")
    shipped: WorstRows = d("at the shipped constants (fitted on validation/runs.yaml's rows; holdout.yaml's never)")
    out_of_sample: WorstRows = d("runs.yaml's rows predicted by constants fitted without their source or model "
                                 "(left_out), holdout.yaml's at the shipped constants")
    memory: WorstRows = d("peak-memory errors of those rows that print a peak, at the shipped constants (n 0 when "
                          "none does); mean_signed < 0: peaks predicted lower than measured")


class ModelAccuracy(Strict):
    """The step-time errors of the published runs of the plan's own model architecture, on any GPU and in any
    precision, at the shipped constants (planner/analysis/bymodel.py, validation/step_errors_by_model.yaml)."""

    model: str = d("the model name of the first such row")
    architecture: str = d("the architecture the rows and the plan share (layers, widths, heads, vocabulary, experts)")
    fitted_runs: int = d("how many of the rows are in validation/runs.yaml (fitted)")
    held_out_runs: int = d("how many are in validation/holdout.yaml (no fit saw them)")
    gpus: list[str] = d("catalog GPU names the rows ran on")
    shipped: WorstRows = d("their step-time errors at the shipped constants; mean_signed < 0: steps predicted "
                           "shorter than measured")


class EstimateOutput(Estimate, Output):
    """`planner estimate --json`: the estimate, its diagnosis, and the what-if re-score on request."""

    diagnosis: Diagnosis = d("why the plan is slow and which levers help")
    envelope: MfuEnvelope = d("the plan's MFU against published runs of its kind of model on its GPU and precision "
                              "(validation/runs.yaml and holdout.yaml)")
    unvalidated_settings: list[UnvalidatedSetting] = d("the plan's settings no published run on its GPU "
                                                       "generation used; empty when all were")
    host_wait: HostWait | None = d("the plan's MoE host wait against the published rows' errors where it is a "
                                   "large share of the step; null otherwise")
    long_context: LongContext | None = d("the plan's sequence length against the longest fitted run on its GPU "
                                         "generation, where it is longer; null otherwise")
    accuracy: StepAccuracy | None = d("how far the model's step time was off on the published runs on the plan's GPU "
                                      "in its precision of its kind of model; null where none was")
    model_accuracy: ModelAccuracy | None = d("how far it was off on the published runs of the plan's own model "
                                             "architecture; null where none was")
    what_if: EstimateWhatIf = omitted("the re-score under --what-if; absent without it")


# --- suggest (planner/search/report.py suggest_report) ---


class SearchSeconds(Strict):
    """Wall seconds of the search by phase."""

    space: float = d("building the plan space")
    tables: float = omitted("tabling the cost model (cpsat solver only)")
    solver: float = d("CP-SAT solve, or scoring every plan (enumerate)")


class Search(Strict):
    """What the search did."""

    solver: Literal["cpsat", "enumerate"] = d("search method")
    objective: Literal["time", "cost"] = d("what was minimised first")
    max_memory_fraction: float = d("usable share of GPU memory")
    space_size: int = d("plans in the space")
    layouts: int = d("(tp, pp, dp) layouts in the space")
    layouts_tabled: int = d("layouts whose cost tables were built")
    candidates: int = d("candidate plans given to the solver (scored plans for enumerate)")
    literals: int = d("CP-SAT literals (0 for enumerate)")
    status: str = d("CP-SAT status name (OPTIMAL, FEASIBLE) or ENUMERATED")
    seconds: SearchSeconds = d("wall seconds by phase")
    notes: list[str] = d("requested options no plan of the space uses")
    context_parallel: str | None = d("for sequences of 16,384 tokens or more, why the best plan's cp is what it "
                                     "is (the same plan re-scored with cp folded into dp, or with cp 2); else null")


class StabilityRow(Strict):
    """The search again under one --what-if-grid value."""

    assumption: str = d("the assumption, e.g. 'network=0.5'")
    best_plan: Plan = d("the best plan under it")
    best_step_time_s: float = d("its step time under it")
    baseline_plan_step_time_s: float = d("the baseline's best plan re-scored under it")
    baseline_rank: int | None = d("rank of the baseline's layout in the new top K; null: not in it")
    baseline_plan_fits: bool = d("the baseline's best plan fits the search's memory limit under this assumption")


class EmittedFramework(Strict):
    """One framework's launch files written by `suggest --emit`."""

    framework: Literal["deepspeed", "megatron", "torchtitan"] = d("the framework the files launch")
    best: bool = d("whether its plan is the best plan (plans[0]); false: its own best, the best doesn't run on it")
    plan: Plan = d("the plan the files launch")
    step_time_s: float = d("that plan's step time")
    files: list[str] = d("paths written for it (its folder under the output folder)")


class Emitted(Strict):
    """What `suggest --emit` wrote."""

    out: str = d("the output folder")
    files: list[str] = d("every path written, the shared README.txt included")
    frameworks: list[EmittedFramework] = d("per framework, the plan its files launch")
    notes: list[str] = d("frameworks asked for that run another plan than the best, or none (no files for them)")


class SuggestedPlan(Estimate):
    """One ranked plan of `suggest`: its estimate, and who can launch it."""

    frameworks: list[str] = d("the searched frameworks whose rules run the plan on this cluster and that build the "
                              "model (planner/frameworks; torchtitan builds only its own models), e.g. "
                              "[\"megatron\", \"torchtitan\"]")
    assumed: str = omitted("the --what-if assumptions this plan's figures were scored under, e.g. \"network=0.5\" "
                           "(compare and emit say so); absent when none")


class SuggestOutput(Output):
    """`planner suggest --json`: the ranked plans, why the best wins, the search, the best plan's diagnosis."""

    plans: list[SuggestedPlan] = d("best plan of each distinct (tp, cp, pp, dp, ep, etp) layout, best first")
    why: str | None = d("why #1 beats #2; null with one plan")
    search: Search = d("what the search did")
    diagnosis: Diagnosis = d("diagnosis of the best plan")
    warnings: list[str] = d("plans whose re-score disagrees with the search tables")
    envelope: MfuEnvelope = d("the best plan's MFU against published runs of its kind of model on its GPU and "
                              "precision (validation/runs.yaml and holdout.yaml)")
    unvalidated_settings: list[UnvalidatedSetting] = d("the best plan's settings no published run on its GPU "
                                                       "generation used; empty when all were")
    host_wait: HostWait | None = d("the best plan's MoE host wait against the published rows' errors where it "
                                   "is a large share of the step; null otherwise")
    long_context: LongContext | None = d("the sequence length against the longest fitted run on the GPU "
                                         "generation, where it is longer; null otherwise")
    accuracy: StepAccuracy | None = d("how far the model's step time was off on the published runs on the GPU in the "
                                      "best plan's precision of the model's kind; null where none was")
    model_accuracy: ModelAccuracy | None = d("how far it was off on the published runs of the model's own "
                                             "architecture; null where none was")
    what_if: str = omitted("the --what-if assumptions the search ran under; absent without them")
    stability: list[StabilityRow] = omitted("one row per --what-if-grid value; absent without it")
    emitted: Emitted = omitted("the launch files --emit wrote; absent without it")


# --- size (planner/sizing/run.py size_dict, option_dict) ---


class SizeAssumptions(Strict):
    """Run assumptions behind time to train."""

    failures_per_1000_gpu_days: float = d("job interruptions per 1000 GPU-days")
    restart_minutes: float = d("time lost per restart")
    checkpoint_gbytes_per_s_per_node: float = d("checkpoint write bandwidth per node")


class SizeOption(Strict):
    """One (offering, GPU count) with its best plan; `finishes` only when it fits, the keys after it only when
    it also finishes."""

    offering: str = d("cluster offering name")
    gpu: str = d("GPU name")
    num_gpus: int = d("GPUs")
    usd_per_gpu_hour: float = d("price per GPU-hour used")
    price_kind: PriceKind | None = d("kind of price in the catalog; null for a price given by --prices or --what-if")
    price_date: str | None = d("date of the catalog price; null for a given price")
    price_source: str | None = d("source of the catalog price, or 'given: ...' for a price from --prices or --what-if")
    fits: bool = d("some plan fits in memory on this many GPUs")
    finishes: bool = omitted("the run ends: interruptions (x restart and lost work) do not come faster than it "
                             "recovers; absent when nothing fits")
    days: float = omitted("days to train, checkpoints and restarts included")
    usd: float = omitted("dollars to train")
    steps: int = omitted("optimizer steps to train")
    step_time_s: float = omitted("seconds per step of the best plan")
    checkpoint_s: float = omitted("seconds per checkpoint save")
    checkpoint_interval_s: float | None = omitted("seconds between checkpoints (Young's interval); null with no "
                                                  "interruptions (no checkpoint written)")
    expected_failures: float = omitted("expected interruptions over the run")
    overhead_fraction: float = omitted("share of the run spent on checkpoints and restarts")
    estimate: Estimate = omitted("the best plan's estimate")


class SizeStabilityRow(Strict):
    """The sizing again under one --what-if-grid value."""

    assumption: str = d("the assumption, e.g. 'network=0.5'")
    cheapest: str = d("cheapest option there, as one line ('-': none)")
    fastest: str = d("fastest option there, as one line ('-': none)")
    cheapest_stays: bool = d("the same offering and count as without the assumption")
    fastest_stays: bool = d("the same offering and count as without the assumption")


class OtherGpu(Strict):
    """Another GPU type's best option and why it loses to the chosen one."""

    gpu: str = d("GPU type")
    offering: str = d("its offering of that option")
    num_gpus: int = d("GPUs of that option")
    days: float = d("days to train")
    usd: float = d("total dollars")
    why: str = d("the main reason it loses: deadline, price, network or throughput")


class SizeOutput(Output):
    """`planner size --json`: every option, the Pareto front, the cheapest and the fastest choice."""

    model: str = d("model name")
    tokens: float = d("tokens to train on")
    global_batch_size: int = d("sequences per step")
    seq_length: int = d("tokens per sequence")
    deadline_days: float | None = d("--deadline-days, or null")
    budget_usd: float | None = d("--budget-usd, or null")
    assumptions: SizeAssumptions = d("run assumptions")
    searched: int = d("plan searches run")
    seconds: float = d("wall seconds of the scan")
    skipped_unpriced: list[str] = d("offerings not sized (no price, or spot)")
    notes: list[str] = d("where scans stopped, dominated offerings, what an unmet deadline or budget needs")
    options: list[SizeOption] = d("every (offering, count) sized")
    pareto: list[SizeOption] = d("options no other beats on both days and dollars, fastest first, of those "
                                 "pareto_scope names")
    pareto_scope: Literal["all", "meeting_deadline", "sized"] = d(
        "what the front is over: every option (no deadline), those meeting the deadline, or, when none meets it, "
        "the counts sized (the scan skips counts that cannot meet it, often the cheapest)")
    cheapest: SizeOption | None = d("cheapest option meeting the deadline and budget; null: none")
    fastest: SizeOption | None = d("fastest option meeting the deadline and budget; null: none")
    other_gpus: list[OtherGpu] = d("per other GPU type, its best option and why it loses to the chosen "
                                   "one (the cheapest, else the fastest); empty without a choice")
    what_if: str | None = d("the --what-if assumptions, or null")
    stability: list[SizeStabilityRow] = d("one row per --what-if-grid value (empty without it)")


# --- compare (planner/analysis/compare.py) ---


class EchoedEstimate(BaseModel):
    """An estimate object as read from A.json or B.json and echoed unchanged: the output of
    `estimate --json` (schema_version, diagnosis and what_if included) or one plan of
    `suggest --json` when planner wrote it; a file written otherwise may hold other keys, so only
    the keys compare requires are typed here."""

    model_config = ConfigDict(extra="allow", strict=True)

    plan: dict[str, Any] = d("the plan as given")
    step_time_s: float = d("seconds per step")
    time_breakdown_s: dict[str, float] = d("step time by part")
    memory_per_gpu_bytes: float = d("bytes on the fullest GPU")
    usd_per_step: float = d("dollars per step")
    mfu: float = d("model FLOPs utilisation")


class CompareOutput(Output):
    """`planner compare A.json B.json --json`: which is faster and why, with both plans."""

    faster: Literal["A", "B", "tie"] = d("the faster plan")
    cheaper: Literal["A", "B", "tie"] | None = d("the plan with fewer dollars per trained token (null without "
                                                    "both prices)")
    measure: Literal["step time", "tokens/s per GPU"] = d("what was compared (tokens/s per GPU when the jobs differ)")
    why: str = d("why it wins, in one sentence")
    same_job: bool = d("same model, cluster, GPU, GPU count, sequence length and global batch")
    differences: list[str] = d("what the two jobs do not share")
    does_not_fit: list[Literal["A", "B"]] = d("plans that do not fit in GPU memory")
    warnings: list[str] = d("caveats of the comparison")
    a: EchoedEstimate = d("A as read")
    b: EchoedEstimate = d("B as read")


# --- validate (planner/validation/runs.py, generalise.py) ---


class ValidationRow(Strict):
    """One published run, predicted."""

    id: str = d("run id in validation/runs.yaml")
    group: str = d("source group")
    generation: Generation = d("GPU generation")
    precision: Precision = d("the plan's precision (the GEMMs' number format), the key of by_precision")
    source: str = d("where the measurement was published")
    predicted_step_time_s: float = d("cost-model step time")
    measured_step_time_s: float = d("published step time")
    step_time_error: float = d("predicted / measured - 1 (+: the model is slower)")
    predicted_memory_gib: float = d("cost-model peak memory per GPU")
    measured_memory_gib: float | None = d("published peak memory per GPU; null: not published")
    memory_error: float | None = d("predicted / measured - 1; null: no published memory")


class GroupErrors(Strict):
    """Errors of one group of rows."""

    step_time: ErrorStats = d("step-time errors")
    memory: ErrorStats = d("memory errors (rows that publish a peak)")


class EqualInputGroup(Strict):
    """Scored rows whose cost-model inputs are equal."""

    ids: list[str] = d("the rows' ids")
    measured_step_time_s: list[float] = d("their published step times, in the same order")
    best_max_abs: float = d("the smallest largest relative error one prediction can have on them")


class MeasurementFloor(Strict):
    """What equal-input rows measured apart cost any model (planner/validation/floor.py)."""

    rows: int = d("scored rows")
    grouped_rows: int = d("rows in a group of two or more with equal inputs")
    mape: float = d("the smallest step-time MAPE over all scored rows that any model can reach")
    max_abs: float = d("the smallest largest step-time error that any model can reach")
    groups: list[EqualInputGroup] = d("the groups, largest spread first")


class ValidateOutput(Output):
    """`planner validate --json`: every row and the errors per group, GPU generation and precision."""

    rows: list[ValidationRow] = d("one per scored run")
    summary: dict[str, GroupErrors] = d("'overall' and one entry per source group")
    by_generation: dict[str, GroupErrors] = d("one entry per GPU generation of the rows, oldest first")
    by_precision: dict[str, GroupErrors] = d("one entry per plan precision of the rows")
    measurement_floor: MeasurementFloor = d("the error that rows with equal inputs but different "
                                             "measurements force on any model")


class FittedConstants(Strict):
    """The shared efficiency constants as fitted (costmodel.types.Efficiency fields)."""

    matmul_half_dim: float = d("GEMM dimension at half the large-GEMM efficiency")
    hbm_efficiency: float = d("achievable share of HBM bandwidth for elementwise kernels")
    layer_overhead_seconds: float = d("per-layer kernel and synchronisation overhead")
    flash_attention_peak_fraction_cudnn_hopper: float = d(
        "cuDNN's fused attention's long-sequence fraction of peak on Hopper (FlashAttention-2: a measured share of it)")
    flash_attention_peak_fraction_ampere: float = d("the same for either attention kernel on Ampere")
    flash_attention_peak_fraction_blackwell: float = d("the same for Blackwell's attention kernels")
    moe_host_sync_seconds: float = d("host synchronisation per MoE layer and micro-batch without CUDA graphs")
    flash_attention_half_seq: float = d("sequence length at half that fraction")
    memory_fragmentation_fraction: float = d("caching-allocator slack over the analytic allocation")


class SplitErrors(Strict):
    """Errors of a set of predicted rows: overall and per source group, GPU generation and precision."""

    overall: GroupErrors = d("all the rows")
    by_group: dict[str, GroupErrors] = d("one entry per source group")
    by_generation: dict[str, GroupErrors] = d("one entry per GPU generation, oldest first")
    by_precision: dict[str, GroupErrors] = d("one entry per plan precision")


class HeldOutRow(Strict):
    """One row predicted by constants fitted without it."""

    id: str = d("run id in validation/runs.yaml")
    group: str = d("source group")
    generation: Generation = d("GPU generation")
    precision: Precision = d("plan precision")
    held_out: str = d("the source group or generation left out of the fit that predicted it")
    predicted_step_time_s: float = d("cost-model step time, out of sample")
    measured_step_time_s: float = d("published step time")
    step_time_error: float = d("predicted / measured - 1, out of sample (+: the model is slower)")
    in_sample_step_time_error: float | None = d("the same with constants fitted on all rows; null under --fit-on")
    predicted_memory_gib: float = d("cost-model peak memory per GPU, out of sample")
    measured_memory_gib: float | None = d("published peak memory per GPU; null: not published")
    memory_error: float | None = d("predicted / measured - 1; null: no published memory")


FIT_OBJECTIVE = ("what the fit minimised, as reached: the mean over source groups of each group's step-time MAPE, so "
                 "that every source weighs the same (not the rows' MAPE)")


class ValidateFitOnOutput(Output):
    """`planner validate --fit-on G --json`: constants fitted on one generation, judged on the rest."""

    fit_on: str = d("GPU generation fitted on (one the rows hold), or 'all'")
    fitted: FittedConstants = d("the fitted constants")
    train_rows: int = d("rows fitted on")
    train_mape: float = d("step-time MAPE on them, each row weighing the same")
    train_objective: float = d(FIT_OBJECTIVE)
    train_memory_mape: float | None = d("memory MAPE on them; null: none publishes a peak")
    heldout_rows: int = d("held-out rows")
    heldout_mape: float | None = d("step-time MAPE on the held-out rows; null: none")
    heldout_memory_mape: float | None = d("memory MAPE on the held-out rows; null: none with a peak")
    held_out: SplitErrors = d("errors of the held-out rows")
    rows: list[HeldOutRow] = d("one per held-out row")


class HeldOutFit(Strict):
    """One source group (or generation) left out: the fit on the other rows and its error on this one."""

    train_rows: int = d("rows fitted on (every other group's)")
    fitted: FittedConstants = d("the constants fitted on them")
    train_mape: float = d("step-time MAPE on the rows fitted on, each row weighing the same")
    train_objective: float = d(FIT_OBJECTIVE)
    train_memory_mape: float | None = d("memory MAPE on them; null: none publishes a peak")
    step_time: ErrorStats = d("step-time errors of the held-out rows, out of sample")
    memory: ErrorStats = d("memory errors of the held-out rows with a peak, out of sample")
    in_sample: GroupErrors = d("the same rows' errors with constants fitted on all rows")


class LeaveOneOut(SplitErrors):
    """Every row predicted once, by constants fitted without its source group (or generation); in the split by
    mixture-of-experts model, every MoE row, by constants fitted without its model's rows."""

    held_out: dict[str, HeldOutFit] = d("one entry per group (or generation, or MoE model) left out")
    rows: list[HeldOutRow] = d("one per scored row (per scored MoE row in the split by MoE model)")


class InSampleFit(SplitErrors):
    """Constants fitted on all rows and scored on the same rows."""

    fitted: FittedConstants = d("the constants fitted on all rows")
    train_mape: float = d("step-time MAPE on all rows, each row weighing the same")
    train_objective: float = d(FIT_OBJECTIVE)
    train_memory_mape: float | None = d("memory MAPE reached; null: no row publishes a peak")


class ValidateLeaveOneOutOutput(Output):
    """`planner validate --leave-one-source-out --json`: out-of-sample errors."""

    rows: int = d("scored rows")
    fits: int = d("fits run: all rows, then one per group, one per generation and one per MoE model left out")
    fit_seconds: float = d("wall time of the fits")
    in_sample: InSampleFit = d("fitted on all rows, for contrast")
    leave_one_source_out: LeaveOneOut = d("each source group predicted by constants fitted on the others")
    leave_one_generation_out: LeaveOneOut = d("each GPU generation predicted by constants fitted on the others")
    leave_one_moe_model_out: LeaveOneOut = omitted("each mixture-of-experts model's rows predicted by constants "
                                                   "fitted on every other row (the MoE rows are one source: leaving "
                                                   "it out fits the MoE constants on none); absent when the rows "
                                                   "hold fewer than two MoE models")


# --- calibrate (planner/commands/calibrate.py report, planner/calibration/output.py) ---


class LinkTier(Strict):
    """One link tier fitted to nccl-tests rows."""

    busbw_gbytes_per_s: float = d("fitted bus bandwidth")
    busbw_stderr_gbytes_per_s: float | None = d("its standard error; null with fewer than 3 rows")
    latency_us: float = d("latency per ring step (the prior one when not fitted)")
    latency_fitted: bool = d("false: the fit gave a negative latency and the prior is kept")
    latency_stderr_us: float | None = d("its standard error; null with fewer than 3 rows")
    rows: int = d("log rows fitted")


class NcclRow(Strict):
    """One large-message nccl-tests row against the fitted model."""

    log: str = d("log file")
    collective: Literal["all_reduce", "all_gather", "reduce_scatter", "sendrecv"] = d("nccl-tests test")
    ranks: int = d("ranks in the run")
    tier: Literal["nvlink", "network"] = d("tier the row calibrates")
    size_bytes: int = d("message size")
    measured_us: float = d("measured time")
    model_us: float = d("time under the fitted links")
    error: float = d("model / measured - 1")


class TimedStepRow(Strict):
    """One timed step against the model."""

    step: str = d("the step's name")
    measured_s: float = d("measured seconds per step")
    before_s: float = d("predicted with the cluster as given")
    after_s: float = d("predicted with the calibrated cluster and fitted scale")
    implied_scale: float = d("scale at which the model predicts this step exactly")
    used: bool = d("false: the step barely depends on compute, left out of the fit")


class ComputeFit(Strict):
    """The matmul efficiency scale fitted to timed steps."""

    matmul_efficiency_scale: float = d("fitted scale of the achievable matmul efficiency")
    stderr: float | None = d("its standard error; null with one step used")
    mape_before: float = d("step-time MAPE with the cluster as given")
    mape_after: float = d("step-time MAPE calibrated")
    steps: list[TimedStepRow] = d("one per timed step")
    warnings: list[str] = d("timed steps whose plan the memory model puts over the GPU's memory (fitted as given)")


class CalibrateOutput(Output):
    """`planner calibrate --json`: the fitted link tiers, the rows behind them, the compute fit."""

    cluster: str = d("cluster calibrated")
    out: str | None = d("--out file, or null")
    plot: str | None = d("--plot file, or null")
    nvlink: LinkTier | None = d("NVLink fit; null without single-node logs")
    network: LinkTier | None = d("network fit; null without multi-node logs")
    rows: list[NcclRow] = d("rows fitted (empty without --nccl)")
    compute: ComputeFit | None = d("compute fit; null without --step-times")


# --- catalog (planner/inputs/catalogs.py gpu_rows, cluster_rows; loading.py model_rows) ---


class GpuRow(Strict):
    """One catalog GPU."""

    name: str = d("GPU name")
    generation: Generation = d("GPU generation")
    memory_gib: float = d("memory per GPU")
    bf16_tflops: float | None = d("dense BF16 TFLOP/s; null: not listed")
    fp8_tflops: float | None = d("dense FP8 TFLOP/s; null: not supported or not listed")
    hbm_gbytes_per_s: float = d("HBM bandwidth")
    nvlink_gbytes_per_s: float = d("NVLink bandwidth per direction (0: none)")
    tdp_watts: float | None = d("rated board power; null: not listed")
    power_limit_watts: float | None = d("lower power cap it runs under; null: none")
    published_runs_in: list[str] = d("precisions in which validation/ holds a scored published run on this GPU "
                                     "(the MFU envelope's); empty: the cost model was never judged on it")


class ClusterRow(Strict):
    """One catalog cluster offering."""

    name: str = d("cluster name")
    gpu: str = d("GPU name")
    gpus_per_node: int = d("GPUs per node")
    nvlink_domain_size: int | None = d("GPUs per NVLink domain; null: the node (1 without NVLink)")
    network_gbits_per_s: float = d("network bandwidth per GPU")
    rdma: bool = d("RDMA (GPUDirect) networking")
    usd_per_gpu_hour: float | None = d("price per GPU-hour; null: unpriced")
    price_kind: PriceKind | None = d("kind of price")
    price_date: str | None = d("date of the price")


class ModelRow(Strict):
    """One catalog model."""

    name: str = d("model name")
    parameters_b: float = d("parameters in billions, 2 decimals")
    active_b: float = d("parameters one token uses (its top-k experts), in billions, 2 decimals")
    experts: str = d("routed experts and how many a token uses ('256 x top 8'), '-' for a dense model")
    layers: int = d("transformer layers")
    hidden: int = d("hidden size")
    heads: int = d("attention heads")
    kv_heads: int = d("key/value heads")
    seq_length: int = d("sequence length")
    mlp: Mlp = d("MLP activation")


class CatalogGpusOutput(Output):
    """`planner catalog gpus --json`."""

    kind: Literal["gpus"] = d("what the rows are")
    rows: list[GpuRow] = d("one per catalog GPU")


class CatalogClustersOutput(Output):
    """`planner catalog clusters --json`."""

    kind: Literal["clusters"] = d("what the rows are")
    rows: list[ClusterRow] = d("one per catalog cluster")


class CatalogModelsOutput(Output):
    """`planner catalog models --json`."""

    kind: Literal["models"] = d("what the rows are")
    rows: list[ModelRow] = d("one per catalog model")


OUTPUTS: dict[str, type[Output]] = {
    "estimate": EstimateOutput,
    "diagnose": EstimateOutput,  # estimate by its other name (commands/estimate.py)
    "suggest": SuggestOutput,
    "size": SizeOutput,
    "compare": CompareOutput,
    "validate": ValidateOutput,
    "validate --fit-on": ValidateFitOnOutput,
    "validate --leave-one-source-out": ValidateLeaveOneOutOutput,
    "calibrate": CalibrateOutput,
    "catalog gpus": CatalogGpusOutput,
    "catalog clusters": CatalogClustersOutput,
    "catalog models": CatalogModelsOutput,
}


def parse_output(command: str, text: str) -> Output:
    """The printed JSON of `command` read into its model; pydantic.ValidationError when it breaks the contract."""
    return OUTPUTS[command].model_validate_json(text)


# --- the JSON Schema document ---


def schema_document() -> dict:
    """One JSON Schema (2020-12) for every command's output: a definition per command in `$defs`,
    a top-level `oneOf` over them, and `x-commands` mapping each command to its definition."""
    refs, defs = models_json_schema([(model, "validation") for model in OUTPUTS.values()])
    commands = {command: refs[(model, "validation")]["$ref"] for command, model in OUTPUTS.items()}
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "planner --json output",
        "description": f"What each planner command prints with --json (schema_version {SCHEMA_VERSION}): one "
                       "strict JSON object (no NaN or Infinity), generated from planner/commands/contract.py.",
        "x-schema-version": SCHEMA_VERSION,
        "x-commands": commands,
        "oneOf": [{"$ref": ref} for ref in dict.fromkeys(commands.values())],
        **defs,
    }


def schema_text() -> str:
    """The schema document as the shipped file holds it."""
    return json.dumps(schema_document(), indent=2, ensure_ascii=False) + "\n"


def schema_path() -> Path:
    """Where the shipped schema file is (in the installed package, or this source tree)."""
    return Path(str(resources.files("planner.commands"))) / SCHEMA_FILE


def shipped_schema() -> dict:
    """The shipped schema file, parsed."""
    return json.loads(schema_path().read_text(encoding="utf-8"))


def command_schema(command: str, document: dict | None = None) -> dict:
    """A schema for one command's output alone: its definition with the document's `$defs`."""
    document = document or shipped_schema()
    return {"$schema": SCHEMA_DIALECT, "$ref": document["x-commands"][command], "$defs": document["$defs"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planner.commands.contract",
                                     description="Print, write or check the JSON Schema of planner's --json output.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"regenerate {SCHEMA_FILE} from the models")
    group.add_argument("--check", action="store_true", help=f"exit 1 when {SCHEMA_FILE} differs from the models")
    args = parser.parse_args(argv)
    if args.write:
        schema_path().write_text(schema_text(), encoding="utf-8")
        print(f"wrote {schema_path()}")
    elif args.check:
        same = schema_path().is_file() and schema_path().read_text(encoding="utf-8") == schema_text()
        print(f"{schema_path()}: {'up to date' if same else 'differs from the models; run with --write'}")
        return 0 if same else 1
    else:
        sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
