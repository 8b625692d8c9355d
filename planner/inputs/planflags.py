"""A plan written as command-line flags (`--tp 8 --pp 4 --zero 1 ...`): the flags, and the PlanSpec
they give. `planner estimate` takes them, and timed-step files (inputs/step_times.py) spell one
plan per row with the same names."""
from __future__ import annotations

import argparse

from costmodel import types as cm
from costmodel.types import DISPATCH_DTYPES, OFFLOAD_MODULES, PRECISIONS, PROJECTIONS, RANK_ORDERS, RECOMPUTE_MODULES

from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.argtypes import batch_arg, bounded_int, degree_arg, plain_int


NUMERICS = ("optimizer_states", "lowp_param_gather")  # Plan fields that change the numerics: the user's choice


def add_numerics_flags(g) -> None:
    """Flags for the numerics a plan may change (NUMERICS): estimate scores one plan with them, suggest
    searches every plan under them (it never picks them itself)."""
    g.add_argument("--optimizer-states", default="fp32", choices=["fp32", "bf16"],
                   help="Adam states in fp32 (default) or bf16 moments with 16-bit master remainders (Megatron "
                        "--use-precision-aware-optimizer)")
    g.add_argument("--lowp-param-gather", action="store_true",
                   help="keep parameters in the low-precision format and all-gather them so (Megatron "
                        "--fp8-param-gather / --fp4-param-gather)")


def add_plan_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("plan")
    add_numerics_flags(g)
    g.add_argument("--tp", type=degree_arg, default=1, help="tensor-parallel degree (default 1)")
    g.add_argument("--pp", type=degree_arg, default=1, help="pipeline-parallel degree (default 1)")
    g.add_argument("--dp", type=degree_arg, help="data-parallel degree (default GPUs / (tp*cp*pp))")
    g.add_argument("--cp", type=degree_arg, default=1, help="context-parallel degree: each sequence split over cp "
                                                          "GPUs (default 1)")
    g.add_argument("--cp-comm", default="p2p", choices=list(cm.CP_COMMS),
                   help="how context-parallel ranks exchange keys and values: ring (p2p, default), all-gather "
                        "(re-gathered in backward, Transformer Engine's), all-gather with the gathered keys and "
                        "values saved for backward (all_gather_saved, torchtitan's FlexAttention), Ulysses "
                        "all-to-all (a2a), or a2a inside a node and ring across")
    g.add_argument("--ep", type=degree_arg, default=1, help="expert-parallel degree for MoE models (default 1)")
    g.add_argument("--etp", type=degree_arg, default=1, help="expert tensor-parallel degree for MoE models (default 1)")
    g.add_argument("--vpp", type=bounded_int(L.MAX_LAYERS), default=1, help="virtual pipeline stages per GPU, interleaving (default 1)")
    g.add_argument("--mbs", type=batch_arg, default=1, help="micro-batch size in sequences (default 1)")
    g.add_argument("--gbs", type=batch_arg, help="global batch in sequences (default: the model's, else mbs*dp*gas)")
    g.add_argument("--gas", type=batch_arg, help="gradient accumulation steps (alternative to --gbs)")
    g.add_argument("--zero", type=bounded_int(3, lower=0), default=0, metavar="{0,1,2,3}",
                   help="ZeRO stage (default 0)")
    g.add_argument("--recompute", default="none", choices=["none", "selective", "op", "full"],
                   help="activation recompute: selective = Megatron (attention core), op = torchtitan per-op SAC")
    g.add_argument("--recompute-layers", type=bounded_int(L.MAX_LAYERS, lower=0), default=0, metavar="N",
                   help="under --recompute full, recompute only the first N layers of each model chunk (pipeline "
                        "stage, or virtual stage under --vpp); the others keep their activations (Megatron "
                        "--recompute-method block --recompute-num-layers N; default 0: every layer)")
    g.add_argument("--recompute-modules", metavar="M,M",
                   help="what --recompute selective replays: comma-separated, among "
                        f"{', '.join(RECOMPUTE_MODULES)} (default core_attn; Megatron --recompute-modules)")
    g.add_argument("--ep-overlap", action="store_true",
                   help="overlap expert-parallel all-to-alls with another micro-batch's compute (Megatron "
                        "--overlap-moe-expert-parallel-comm)")
    g.add_argument("--ep-dispatch", default="alltoall", choices=["alltoall", "deepep"],
                   help="MoE token dispatch: NCCL all-to-all (default) or DeepEP/HybridEP, which sends a token once "
                        "per remote NVLink domain (Megatron --moe-token-dispatcher-type flex)")
    g.add_argument("--ep-dispatch-dtype", default="bf16", choices=list(DISPATCH_DTYPES),
                   help="wire format of the tokens sent to the experts and of the gradients sent back to them: bf16 "
                        "(default) or mxfp8, quantized before the exchange (Megatron --moe-dispatch-fwd-dtype and "
                        "--moe-combine-bwd-dtype mxfp8, NCCL EP, Blackwell)")
    g.add_argument("--moe-cuda-graphs", action="store_true",
                   help="MoE router and dispatch preprocessing captured in CUDA graphs (Megatron --cuda-graph-impl "
                        "transformer_engine --cuda-graph-modules moe_router moe_preprocess): no host sync per MoE layer "
                        "with --ep-dispatch deepep (the all-to-all dispatcher syncs all the same)")
    g.add_argument("--full-iteration-graph", action="store_true",
                   help="the whole forward-backward captured as one CUDA graph (Megatron --cuda-graph-impl "
                        "full_iteration): no per-layer launch overhead, no host sync; an MoE plan needs --ep-dispatch "
                        "deepep (written as HybridEP with a per-rank token budget) or experts padded to a capacity")
    g.add_argument("--layer-cuda-graphs", action="store_true",
                   help="each dense layer's forward and backward captured as CUDA graphs (Megatron-core's per-layer "
                        "graphs, NeMo LAYER_CUDA_GRAPH): no launch overhead inside a layer; scored, not searched, "
                        "and emit refuses it (the graphs' memory is not priced)")
    g.add_argument("--fp8-attention", action="store_true",
                   help="the attention core's matmuls in FP8 too (Transformer Engine fp8_dot_product_attention; "
                        "needs a low --precision)")
    g.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism (needs tp > 1)")
    g.add_argument("--precision", default="bf16", choices=list(PRECISIONS),
                   help="GEMM precision of the transformer layers (mxfp8, mxfp4, nvfp4: block-scaled formats; nvfp4 "
                        "Blackwell only, mxfp8 and mxfp4 Blackwell and AMD CDNA4)")
    g.add_argument("--fp8-recipe", default="delayed", choices=["delayed", "tensorwise", "rowwise", "blockwise"],
                   help="fp8 scaling: delayed (amax history, default), tensorwise (current scaling), rowwise "
                        "(torchao), blockwise")
    g.add_argument("--bf16-layers", metavar="START,END", help="transformer layers kept 16-bit at the start and end "
                                                              "of the stack under fp8/mxfp8/nvfp4 (e.g. 1,1)")
    g.add_argument("--tp-comm-overlap", action="store_true",
                   help="overlap TP collectives with the GEMMs beside them (Megatron userbuffers, torchtitan "
                        "AsyncTP; needs --sequence-parallel)")
    g.add_argument("--offload-layers", type=bounded_int(L.MAX_LAYERS, lower=0), default=0,
                   help="layers per pipeline stage whose activations go to host memory (needs the cluster's "
                        "host_link_gbytes_per_s)")
    g.add_argument("--offload-modules", metavar="M,M", default="",
                   help="modules of every layer whose inputs go to host memory (Megatron fine-grained activation "
                        f"offload): comma-separated, among {', '.join(OFFLOAD_MODULES)} (needs the cluster's "
                        "host_link_gbytes_per_s)")
    g.add_argument("--offload-optimizer-states", action="store_true",
                   help="keep the optimizer's states and master weights in host memory between optimizer steps, "
                        "back on the GPU for the step (Megatron-LM dev's --offload-optimizer-states; needs the "
                        "cluster's host_link_gbytes_per_s)")
    g.add_argument("--no-zero3-reshard", action="store_true",
                   help="ZeRO-3 keeps each layer's gathered weights from forward to backward (torchtitan with PP)")
    g.add_argument("--pipeline-buffers", default="freed", choices=["freed", "per_microbatch"],
                   help="stage outputs freed once sent (Megatron-core, default) or a receive buffer per micro-batch "
                        "for activations and gradients (torch.distributed.pipelining: torchtitan)")
    g.add_argument("--grad-sync", default="buckets", choices=["buckets", "chunk_end", "microbatch"],
                   help="gradients reduced in buckets during the last backward (default); under ZeRO-1, once per "
                        "pipeline chunk after its last backward into new shard storage (chunk_end: FSDP2 under "
                        "torch.distributed.pipelining, torchtitan); under ZeRO 0, all-reduced after every "
                        "micro-batch (microbatch: torchtitan's data_parallel_replicate)")
    g.add_argument("--grad-bucket-elements", type=bounded_int(L.MAX_GRAD_BUCKET_ELEMENTS, lower=0), default=0,
                   metavar="N",
                   help="elements of each reduce bucket the runtime copies gradients into for their reduction, "
                        "counted with the gradients: one (ZeRO-3), or one and a second under the overlapped sync "
                        "(ZeRO-1/2); 0 (default): reduced where they are (Megatron-core, FSDP2). DeepSpeed: "
                        "500000000 at ZeRO-1/2, hidden_size^2 at ZeRO-3 (the launch files' sizes)")
    g.add_argument("--attention-kernel", choices=list(cm.ATTENTION_KERNELS),
                   help="fused attention kernel: cuDNN's (Transformer Engine on Hopper and later, PyTorch SDPA from "
                        "2.9 with cuDNN > 9.15; default), a FlashAttention-2-class one (flash-attn 2, older SDPA, "
                        "FlexAttention), about 1.9x slower on Hopper, or FlashAttention-3 (Hopper only; torchtitan's "
                        "gpt-oss), priced as cuDNN's")
    g.add_argument("--repeat-kv", action="store_true",
                   help="K/V repeated to the query heads before attention (torchtitan before enable_gqa): saved "
                        "and exchanged over context parallelism at the query heads' width")
    g.add_argument("--no-tp-async-grad", action="store_true",
                   help="the backward's TP collectives wait for the GEMMs before them (Megatron-LM before 2021-09, "
                        "Megatron-DeepSpeed, DTensor: DeepSpeed and torchtitan), not run beside the weight- and "
                        "input-gradient GEMMs as Megatron-LM's and Transformer Engine's linears do (default)")
    g.add_argument("--sp-gathered", action="store_true",
                   help="sequence parallel's QKV and MLP inputs saved gathered, whole on every TP rank (DTensor: "
                        "torchtitan), not as the shard Megatron re-gathers in backward")
    g.add_argument("--projections", choices=list(PROJECTIONS),
                   help="the dense projections as the model code writes them: QKV and gate/up one GEMM each "
                        "(fused: Megatron-core, the default), QKV one and gate/up two (fused_qkv: torchtitan, the "
                        "default under --recompute op) or all separate (separate: torchtitan before 2026-06)")
    g.add_argument("--rank-order", default=RANK_ORDERS[0], choices=list(RANK_ORDERS),
                   help="how ranks are numbered, innermost first: data-parallel neighbours together (tp-cp-dp-pp, "
                        "Megatron-LM's default) or a pipeline's stages together (tp-cp-pp-dp, "
                        "--use-tp-pp-dp-mapping: a replica per NVLink domain, the gradient sync across them)")
    g.add_argument("--weight-casts", default="step", choices=["step", "use"],
                   help="low-precision weight casts cached per step (Transformer Engine, default) or per use (torchao)")
    g.add_argument("--grad-dtype", choices=["fp32", "bf16", "fp16", "int8"],
                   help="dtype gradients are communicated in (default: the 16-bit training dtype; int8 = compression)")
    g.add_argument("--no-overlap", action="store_true", help="DP/ZeRO sync does not overlap backward compute")
    g.add_argument("--no-pp-overlap", action="store_true",
                   help="pipeline p2p does not overlap compute (it does by default with --vpp > 1)")
    g.add_argument("--eager", action="store_true",
                   help="elementwise kernels run unfused, as eager PyTorch (torchtitan without torch.compile)")
    rope = g.add_mutually_exclusive_group()
    rope.add_argument("--no-rope-fusion", action="store_true",
                      help="RoPE runs as eager ops, not one fused kernel (default: as Megatron-LM applies the "
                           "model's: unfused for YaRN without MLA, else fused)")
    rope.add_argument("--rope-fusion", action="store_true",
                      help="RoPE as one fused kernel whatever its scaling (torchtitan's compiled blocks)")
    g.add_argument("--no-moe-act-prologue", action="store_true",
                   help="the experts' activation without Megatron-core's quick-GEGLU prologue (its eager clamp and a "
                        "host wait per MoE layer), as a stack that fuses the whole expert MLP runs it (default: as "
                        "Megatron-LM runs the model's: with it for gpt-oss-like experts)")
    g.add_argument("--expert-sizes-on-device", action="store_true",
                   help="the experts' grouped GEMMs read their token counts on the GPU (torch._grouped_mm, "
                        "torchtitan), so an MoE layer without expert parallelism never waits on the host (default: "
                        "as Megatron-core, which copies them to the host even at ep 1)")
    g.add_argument("--cross-entropy", default="vocab_parallel_fused", choices=list(cm.CROSS_ENTROPY),
                   help="how the loss runs over the logits: Megatron's vocab-parallel steps on an fp32 copy, "
                        "compiled (vocab_parallel_fused, Megatron-LM --cross-entropy-loss-fusion; default) or eager "
                        "(vocab_parallel), kernels over the 16-bit logits (fused: Transformer Engine's, torchtitan's "
                        "compiled loss), or F.cross_entropy on fp32-upcast logits (eager: 12 B per logit at the "
                        "peak instead of 4)")
    g.add_argument("--zero3-gather-unit", default="layer", choices=["layer", "tensor"],
                   help="ZeRO-3 gathers weights per layer (FSDP2, default) or per weight tensor (DeepSpeed of 2021)")
    g.add_argument("--grad-reduce", default="reduce_scatter", choices=["reduce_scatter", "allreduce"],
                   help="ZeRO gradient reduction: reduce-scatter into shards (default) or a full all-reduce in "
                        "5e8-element buckets (DeepSpeed's bf16 pipeline engine, ZeRO-3 of 2021)")
    g.add_argument("--no-flash-attention", action="store_true", help="unfused attention (pre-FlashAttention stacks)")
    g.add_argument("--stage-layers", help="comma-separated layers per model chunk (pp*vpp entries), uneven splits")


def plan_spec_from_args(args: argparse.Namespace):
    from planner.inputs.reading import parse
    from planner.inputs.specs import PlanSpec

    named = [m.strip() for m in (args.recompute_modules or "").split(",") if m.strip()]
    if args.recompute_modules is not None and not named:
        raise PlannerError("--recompute-modules: expected module names (comma-separated), got none")
    if args.offload_modules and not [m for m in args.offload_modules.split(",") if m.strip()]:
        raise PlannerError("--offload-modules: expected module names (comma-separated), got none")
    if args.no_flash_attention and args.attention_kernel:
        raise PlannerError(f"--attention-kernel {args.attention_kernel} names a fused attention kernel; "
                           "--no-flash-attention runs attention unfused")
    if named and named != ["core_attn"] and args.recompute != "selective":  # the default, as a plan JSON writes it
        raise PlannerError(f"--recompute-modules {args.recompute_modules}: it names what --recompute selective "
                           f"replays, and the plan's recompute is {args.recompute}")
    data = {
        "tp": args.tp, "pp": args.pp, "dp": args.dp, "vpp": args.vpp, "micro_batch_size": args.mbs,
        "global_batch_size": args.gbs, "grad_accum_steps": args.gas, "zero_stage": args.zero,
        "recompute": args.recompute, "recompute_layers": args.recompute_layers,
        "sequence_parallel": args.sequence_parallel, "precision": args.precision,
        "grad_dtype": args.grad_dtype, "overlap_dp_comm": not args.no_overlap,
        "overlap_pp_comm": not args.no_pp_overlap,
        "flash_attention": not args.no_flash_attention, "fused_elementwise": not args.eager,
        "rope_fusion": False if args.no_rope_fusion else True if args.rope_fusion else None,
        "moe_act_prologue": False if args.no_moe_act_prologue else None,
        "expert_sizes_on_device": args.expert_sizes_on_device,
        "cross_entropy": args.cross_entropy, "zero3_gather_unit": args.zero3_gather_unit,
        "grad_reduce": args.grad_reduce, "fp8_recipe": args.fp8_recipe, "weight_casts": args.weight_casts,
        "zero3_reshard": not args.no_zero3_reshard, "tp_comm_overlap": args.tp_comm_overlap,
        "tp_async_grad": not args.no_tp_async_grad,
        "offload_layers": args.offload_layers, "lowp_param_gather": args.lowp_param_gather,
        "offload_modules": [m.strip() for m in args.offload_modules.split(",") if m.strip()],
        "offload_optimizer_states": args.offload_optimizer_states,
        "cp": args.cp, "cp_comm": args.cp_comm, "ep": args.ep, "etp": args.etp,
        "recompute_modules": named or ["core_attn"],
        "ep_overlap": args.ep_overlap, "optimizer_states": args.optimizer_states,
        "fp8_attention": args.fp8_attention, "ep_dispatch": args.ep_dispatch,
        "ep_dispatch_dtype": args.ep_dispatch_dtype,
        "moe_cuda_graphs": args.moe_cuda_graphs, "full_iteration_graph": args.full_iteration_graph,
        "layer_cuda_graphs": args.layer_cuda_graphs,
        "pipeline_buffers": args.pipeline_buffers,
        "grad_sync": args.grad_sync, "grad_bucket_elements": args.grad_bucket_elements,
        "repeat_kv": args.repeat_kv, "attention_kernel": args.attention_kernel or "cudnn",
        "sp_gathered": args.sp_gathered,
        "projections": args.projections, "rank_order": args.rank_order,
    }
    if args.bf16_layers is not None:
        start, comma, end = args.bf16_layers.partition(",")
        try:
            if not comma:  # one number would leave the other end to a guess
                raise ValueError(args.bf16_layers)
            data["bf16_layers_start"], data["bf16_layers_end"] = plain_int(start), plain_int(end)
        except ValueError:
            raise PlannerError(f"--bf16-layers expects START,END integers (got {args.bf16_layers[:40]})") from None
    if args.stage_layers is not None:
        try:
            data["stage_layers"] = [plain_int(x) for x in args.stage_layers.split(",")]
        except ValueError:
            raise PlannerError(f"--stage-layers must be comma-separated integers "
                               f"(got {args.stage_layers[:40]!r})") from None
    return parse(PlanSpec, data, "plan flags")
