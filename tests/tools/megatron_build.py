"""Build the model each planner Megatron-LM launch describes with Megatron-LM's own code and record what it
built (by hand, not in CI: Megatron-LM's training package is not on PyPI, and the build needs torch and triton).

    MEGATRON_LM=path/to/Megatron-LM python tests/tools/megatron_build.py [--write]

For every case of CASES (catalog models and Hugging Face configs that planner launches with Megatron-LM), the
arguments `planner emit --format megatron` writes for a one-GPU plan (tp = pp = dp = ep = 1: the whole model on
one rank) go through Megatron-LM's parse_args(), validate_args() and core_transformer_config_from_args(), then
gpt_builders.gpt_builder() builds the GPT model on PyTorch's meta device with Megatron-core's local modules
(--transformer-impl local: no Transformer Engine on a CPU machine; the local modules hold the same weights).
Recorded per case, in tests/data/emit/megatron/build_results.json (read by tests/test_emit_megatron_build.py):
the arguments, the TransformerConfig fields that define the architecture, each decoder layer's kind as the
built model has it (MoE or dense MLP; sliding-window or global attention; RoPE or none), and the parameters
the built model holds, by kind. (DeepSeek-V2-Lite is not among them: Megatron-core's local MLA spec refuses a
query norm without a query LoRA, which Transformer Engine's spec fuses into the up projection.) Without --write
it prints the same and where it differs from the stored file.
"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import megatron_validate  # a sibling: the stand-ins for Megatron-LM on a CPU machine

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "data" / "emit" / "megatron" / "build_results.json"
HF = "tests/data/hf_configs/"
CASES = ["deepseek-v3", "gpt-oss-120b", "gpt3-175b", "llama2-7b", "llama3-8b", "llama3-70b", "llama3-405b",
         "llama4-maverick", "megatron-1.7b", "mixtral-8x7b", "mixtral-8x22b", "nemotron-4-15b", "qwen3-30b-a3b",
         "qwen3-235b-a22b", HF + "glm-4.5.json", HF + "glm-4.5-air.json", HF + "gpt-oss-20b.json",
         HF + "kimi-k2.json", HF + "mistral-7b-v0.1.json", HF + "qwen1.5-moe-a2.7b.json",
         HF + "qwen3-8b.json"]
ONE_GPU = dict(tp=1, pp=1, dp=1, micro_batch_size=1, global_batch_size=1)
CONFIG_FIELDS = (
    "num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "kv_channels", "ffn_hidden_size",
    "normalization", "layernorm_epsilon", "gated_linear_unit", "add_bias_linear", "add_qkv_bias", "qk_layernorm",
    "hidden_dropout", "attention_dropout", "num_moe_experts", "moe_router_topk", "moe_ffn_hidden_size",
    "moe_shared_expert_intermediate_size", "moe_shared_expert_gate", "moe_router_score_function",
    "moe_router_pre_softmax", "moe_router_enable_expert_bias", "moe_router_num_groups", "moe_router_group_topk",
    "moe_router_topk_scaling_factor", "moe_expert_capacity_factor", "moe_apply_probs_on_input",
    "multi_latent_attention", "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim",
    "mtp_num_layers", "window_size", "softmax_type", "glu_linear_offset", "activation_func_clamp_value",
    "rotary_interleaved", "activation_func")
# RoPE scaling: multi-latent attention's YaRN fields, the yarn position type's (set on the config by
# core_transformer_config_from_args, read by gpt_model.py with getattr), Llama 3.1's and linear scaling's arguments
ROPE_FIELDS = ("rotary_scaling_factor", "mscale", "mscale_all_dim", "original_max_position_embeddings", "beta_fast",
               "beta_slow", "yarn_rotary_scaling_factor", "yarn_original_max_position_embeddings", "yarn_beta_fast",
               "yarn_beta_slow", "yarn_mscale", "yarn_mscale_all_dim")
ROPE_ARGS = ("use_rope_scaling", "rope_scaling_factor", "rotary_seq_len_interpolation_factor")
ARG_FIELDS = ("seq_length", "vocab_size", "padded_vocab_size", "untie_embeddings_and_output_weights",
              "position_embedding_type", "rotary_base", "rotary_percent")


def emitted_args(ref: str) -> list[str]:
    """The pretrain_gpt.py arguments planner writes for `ref` on one GPU (the test recomputes these)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from emit_support import job

    from planner.emit import megatron
    from planner.inputs.loading import load_model_spec

    j = job(load_model_spec(str(ROOT / ref) if ref.startswith(HF) else ref), **ONE_GPU)
    return megatron.flat_args(j) + megatron.data_args(j)


class NoStream:
    """A CUDA stream on a CPU machine: work may be ordered on it, and nothing runs there."""

    def __init__(self, *a, **k):
        pass

    def wait_stream(self, *a, **k):
        pass


def shim_torch():
    """Beyond megatron_validate.stand_in, what building a model on a CPU machine lacks: CUDA devices for tensors
    built at construction time (the meta device instead)."""
    import torch

    torch.cuda.is_available = lambda: False
    torch.cuda.current_device = lambda: torch.device("meta")
    from megatron.core.transformer import dot_product_attention, multi_token_prediction

    plain_init = dot_product_attention.DotProductAttention.__init__

    def init(self, *a, k_channels=None, v_channels=None, **k):  # MLA's head dims: the local core attention
        plain_init(self, *a, **k)  # takes none (it has no weights), Transformer Engine's does

    dot_product_attention.DotProductAttention.__init__ = init
    multi_token_prediction.is_inference_column_parallel_linear = lambda m: False  # a TE class, None here

    torch.cuda.Stream = NoStream  # the all-to-all dispatcher makes a copy stream at construction


def parse(argv: list[str]):
    from megatron.core.tokenizers.utils.build_tokenizer import build_tokenizer
    from megatron.training.arguments import parse_args, validate_args
    from megatron.training.global_vars import set_args

    rope = "--position-embedding-type" in argv and argv[argv.index("--position-embedding-type") + 1] == "rope"
    extra = ["--transformer-impl", "local", "--use-cpu-initialization", "--no-gradient-accumulation-fusion",
             "--no-persist-layer-norm"]  # the local modules (torch norms) cannot take the persistent kernel
    sys.argv = ["pretrain_gpt.py", *argv, *extra, *(["--no-rope-fusion"] if rope else [])]
    args = parse_args()
    validate_args(args, {})
    set_args(args)
    build_tokenizer(args)  # sets padded_vocab_size as pretrain_gpt.py does
    return args


def kind_of(name: str, mla: bool) -> str:
    """Which part of the model a parameter belongs to, in the terms planner's count uses."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "bias":
        return "bias"
    if "position_embeddings" in name:
        return "position_embeddings"
    if "softmax_offset" in name:
        return "sinks"
    if not mla and (".q_layernorm." in name or ".k_layernorm." in name):
        return "qk_norm"
    if name.endswith("shared_experts.gate_weight"):
        return "shared_expert_gate"
    return "mtp" if name.startswith("mtp.") else "main"


def layer_kinds(model, cfg) -> dict:
    from megatron.core.transformer.moe.moe_layer import MoELayer
    from megatron.core.transformer.utils import is_layer_window_attention

    layers = model.decoder.layers
    nope = cfg.no_rope_freq if isinstance(cfg.no_rope_freq, list) else [0] * len(layers)
    return {"mlp": "".join("M" if isinstance(layer.mlp, MoELayer) else "D" for layer in layers),
            "attention": "".join("W" if is_layer_window_attention(cfg.window_size, cfg.window_attn_skip_freq, i + 1)
                                 else "G" for i in range(len(layers))),
            "rope": "".join("N" if nope[i] else "R" for i in range(len(layers)))}


def build(ref: str) -> dict:
    import torch

    from gpt_builders import gpt_builder
    from megatron.training.arguments import core_transformer_config_from_args

    argv = emitted_args(ref)
    args = parse(argv)
    cfg = core_transformer_config_from_args(args)
    with torch.device("meta"):
        model = gpt_builder(args, True, True, config=cfg)
    parameters = Counter()
    for name, p in model.named_parameters():
        parameters[kind_of(name, cfg.multi_latent_attention)] += p.numel()
    config = {f: getattr(cfg, f, None) for f in CONFIG_FIELDS}  # MLA fields only on MLATransformerConfig
    config["activation_func"] = getattr(cfg.activation_func, "__name__", str(cfg.activation_func))
    config.update({f: getattr(args, f) for f in ARG_FIELDS})
    rope = {**{f: getattr(cfg, f, None) for f in ROPE_FIELDS}, **{f: getattr(args, f) for f in ROPE_ARGS}}
    return {"args": argv, "config": json.loads(json.dumps(config, default=list)), "rope": rope,
            "layers": layer_kinds(model, cfg),
            "parameters": dict(sorted(parameters.items()))}


def main() -> None:
    write = "--write" in sys.argv[1:]  # parse() replaces sys.argv with each case's arguments
    megatron_validate.stand_in()
    os.chdir(os.environ["MEGATRON_LM"])  # gpt_builders.py and model_provider.py sit at its root
    os.environ.update(WORLD_SIZE="1", RANK="0", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    import torch.distributed as dist

    shim_torch()
    from megatron.core import parallel_state

    dist.init_process_group("gloo", rank=0, world_size=1)
    parallel_state.initialize_model_parallel(1, 1)
    results = {ref: build(ref) for ref in CASES}
    stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for ref, r in results.items():
        print(f"{ref}: {r['parameters']}{'' if stored.get(ref) == r else '  (differs from the stored file)'}")
    if write:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
