"""torchtitan 0.3.0's configuration schema, transcribed by hand for tests/test_emit_torchtitan.py.

CI cannot import torchtitan's own loader: its llama3 package imports triton at module level
(distributed/minimal_async_ep/kernels.py, reached from models/common/token_dispatcher.py) and the
trainer pulls in datasets, tensorboard, wandb and tokenizers, ~400 MB with triton's CUDA tools. So
the tests run a configuration module against stand-ins of the classes it imports: the same field
names, types and defaults that torchtitan 0.3.0 declares, and the checks it applies, each cited.
No torchtitan code is copied. Sources: PyPI torchtitan 0.3.0, whose files are those of
pytorch/torchtitan release/0.3 @ 4f9e9a47 (2026-08-21); paths below are inside torchtitan/.
The same configurations went through torchtitan's real ConfigManager (loader_check.py, README.md).

`run(source)` executes a configuration module and returns its Trainer.Config stand-in;
`check(config, world_size)` returns (errors, warnings, parsed): what torchtitan would refuse, what
its loader only warns about, and the values it would run with.
"""
from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

# ---- config/configs.py -------------------------------------------------------------------------


@dataclass(kw_only=True, slots=True)
class TrainingConfig:
    local_batch_size: int = 8
    global_batch_size: int = -1
    seq_len: int = 2048
    max_norm: Union[float, int] = 1.0
    steps: int = 10000
    enable_cpu_offload: bool = False
    disable_cuda_graphs: bool = False
    dtype: Literal["bfloat16", "float32"] = "float32"
    mixed_precision_param: Literal["bfloat16", "float32"] = "bfloat16"
    mixed_precision_reduce: Literal["float32"] = "float32"
    gc_freq: int = 50
    gc_debug: bool = False


@dataclass(kw_only=True, slots=True)
class ParallelismConfig:
    data_parallel_replicate_degree: int = 1
    data_parallel_shard_degree: int = -1
    fsdp_reshard_after_forward: Literal["default", "always", "never"] = "default"
    enable_fsdp_symm_mem: bool = False
    tensor_parallel_degree: int = 1
    enable_sequence_parallel: bool = True
    spmd_backend: Literal["partial_dtensor", "full_dtensor", "spmd_types"] = "spmd_types"
    pipeline_parallel_degree: int = 1
    module_fqns_per_model_part: Optional[list[list[str]]] = None
    pipeline_parallel_first_stage_less_layers: int = 1
    pipeline_parallel_last_stage_less_layers: int = 1
    pipeline_parallel_layers_per_stage: Optional[int] = None
    pipeline_parallel_schedule: str = "1F1B"
    pipeline_parallel_schedule_csv: Optional[str] = ""
    pipeline_parallel_microbatch_size: int = 1
    context_parallel_degree: int = 1
    context_parallel_load_balancer: Optional[str] = "headtail"
    context_parallel_ptrr_mask_key: Optional[str] = None
    expert_parallel_degree: int = 1


@dataclass(kw_only=True, slots=True)
class CompileConfig:
    enable: bool = False
    enable_async_tensor_parallel: bool = False
    components: list[str] = field(default_factory=lambda: ["model", "loss"])
    backend: str = "inductor"


# ---- distributed/activation_checkpoint.py: the policies and their Config ------------------------


class FullAC:
    @dataclass(kw_only=True, slots=True)
    class Config:
        preserve_rng_state: bool = True
        determinism_check: str = "default"
        debug: bool = False


class SelectiveAC:
    @dataclass(kw_only=True, slots=True)
    class Config:
        preserve_rng_state: bool = True
        determinism_check: str = "default"
        debug: bool = False
        force_recompute_mm_shapes_by_fqns: list[str] = field(default_factory=lambda: ["moe.router.gate"])


class MemoryBudgetAC:
    @dataclass(kw_only=True, slots=True)
    class Config:
        preserve_rng_state: bool = True
        determinism_check: str = "default"
        debug: bool = False
        memory_budget: float = 0.5
        visualize_memory_budget_pareto: bool = False


# ---- components/loss.py, components/quantization/float8.py, mx.py -------------------------------------


class CrossEntropyLoss:
    @dataclass(kw_only=True, slots=True)
    class Config:
        global_vocab_size: Optional[int] = None


class ChunkedLossWrapper:
    @dataclass(kw_only=True, slots=True)
    class Config:
        num_chunks: int = 8
        loss_fn: CrossEntropyLoss.Config = field(default_factory=CrossEntropyLoss.Config)


class Float8LinearConverter:
    @dataclass(kw_only=True, slots=True)
    class Config:
        model_compile_enabled: bool = False  # QuantizationConverter.Config (components/quantization/__init__.py)
        recipe_name: Literal["rowwise", "rowwise_with_gw_hp"] = "rowwise"
        filter_fqns: list[str] = field(default_factory=list)
        emulate: bool = False


class Float8GroupedExpertsConverter:  # components/quantization/float8.py
    @dataclass(kw_only=True, slots=True)
    class Config:
        model_compile_enabled: bool = False


class MXFP8LinearConverter:  # components/quantization/mx.py
    @dataclass(kw_only=True, slots=True)
    class Config:
        model_compile_enabled: bool = False
        fqns: list[str] = field(default_factory=list)


class MXFP8GroupedExpertsConverter:  # components/quantization/mx.py
    @dataclass(kw_only=True, slots=True)
    class Config:
        model_compile_enabled: bool = False
        recipe_name: Literal["mxfp8_rceil"] = "mxfp8_rceil"
        pad_multiple: int = 32


# ---- models/llama3/__init__.py: llama3_configs and model_registry ------------------------------


@dataclass(frozen=True)
class Llama3:
    """The architecture model_registry(flavor) builds: layers, dim, heads, kv heads (None = heads),
    vocab, compute_ffn_hidden_dim(...) worked out, weight tying; all RMSNorm, SwiGLU, no biases,
    ComplexRoPE theta 500000 with max_seq_len 131072."""

    n_layers: int
    dim: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    hidden_dim: int
    enable_weight_tying: bool = False
    rope_theta: float = 500000.0
    max_seq_len: int = 131072


LLAMA3_CONFIGS = {
    "debugmodel": Llama3(6, 256, 16, 16, 2048, 768),
    "1B": Llama3(16, 2048, 32, 8, 128256, 8192, True),
    "3B": Llama3(28, 3072, 24, 8, 128256, 8192, True),
    "8B": Llama3(32, 4096, 32, 8, 128256, 14336),
    "70B": Llama3(80, 8192, 64, 8, 128256, 28672),
    "405B": Llama3(126, 16384, 128, 8, 128256, 53248),
}


# ---- models/qwen3/__init__.py: qwen3_configs (dense and MoE) and model_registry -----------------


@dataclass(frozen=True)
class Qwen3:
    """_0_6b ... _32b: _build_qwen3_layers (GQA with head_dim 128 and per-head q/k RMSNorm, the
    feed-forward of hidden_dim), CosSinRoPE theta 1e6 with max_seq_len 40960."""

    n_layers: int
    dim: int
    n_heads: int
    n_kv_heads: int
    hidden_dim: int
    enable_weight_tying: bool
    head_dim: int = 128
    vocab_size: int = 151936
    rope_theta: float = 1000000.0
    max_seq_len: int = 40960


QWEN3_CONFIGS = {
    "0.6B": Qwen3(28, 1024, 16, 8, 3072, True),
    "1.7B": Qwen3(28, 2048, 16, 8, 6144, True),
    "4B": Qwen3(36, 2560, 32, 8, 9728, True),
    "8B": Qwen3(36, 4096, 32, 8, 12288, False),
    "14B": Qwen3(40, 5120, 40, 8, 17408, False),
    "32B": Qwen3(64, 5120, 64, 8, 25600, False),
}


@dataclass(frozen=True)
class Qwen3Moe:
    """_debugmodel_moe, _30b_a3b, _235b_a22b: every layer _build_qwen3_moe_layers (GQA with head_dim
    128 and per-head q/k RMSNorm, a softmax top-k router, num_experts GroupedExperts of moe_hidden_dim,
    no shared expert), CosSinRoPE of max_seq_len, untied (no enable_weight_tying)."""

    n_layers: int
    dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    moe_hidden_dim: int
    num_experts: int
    top_k: int
    rope_theta: float
    max_seq_len: int
    enable_weight_tying: bool = False


QWEN3_MOE_CONFIGS = {
    "debugmodel_moe": Qwen3Moe(8, 256, 16, 8, 128, 2048, 768, 64, 8, 1000000.0, 4096),
    "30B-A3B": Qwen3Moe(48, 2048, 32, 4, 128, 151936, 768, 128, 8, 1000000.0, 40960),
    "235B-A22B": Qwen3Moe(94, 4096, 64, 4, 128, 151936, 1536, 128, 8, 5000000.0, 40960),
}


# ---- models/deepseek_v3/__init__.py: deepseekv3_configs and model_registry -----------------------


@dataclass(frozen=True)
class DeepSeekV3:
    """_debugmodel, _16b, _236b, _671b: build_mla_moe_layers (MLA with kv_lora_rank 512, nope 128, rope 64,
    v 128, a query latent of q_lora_rank when not 0; layers below n_dense_layers with the FeedForward of
    dense_hidden_dim, the rest MoE of num_experts GroupedExperts of moe_hidden_dim, top_k, and
    moe_hidden_dim x num_shared_experts shared), ComplexRoPE theta 1e4, YaRN x40, max_seq_len 4096 x 4;
    untied. n_kv_heads stands for MLA's per-head keys: n_heads."""

    n_layers: int
    dim: int
    n_heads: int
    vocab_size: int
    q_lora_rank: int
    dense_hidden_dim: int
    moe_hidden_dim: int
    num_experts: int
    top_k: int
    num_shared_experts: int
    n_dense_layers: int
    max_seq_len: int = 16384
    enable_weight_tying: bool = False

    @property
    def n_kv_heads(self) -> int:
        return self.n_heads


DEEPSEEK_V3_CONFIGS = {
    "debugmodel": DeepSeekV3(6, 256, 16, 2048, 0, 1024, 256, 8, 3, 2, 1),
    "16B": DeepSeekV3(27, 2048, 16, 102400, 0, 10944, 1408, 64, 6, 2, 1),
    "236B": DeepSeekV3(60, 5120, 128, 102400, 1536, 12288, 1536, 160, 6, 2, 1),
    "671B": DeepSeekV3(61, 7168, 128, 129280, 1536, 18432, 2048, 256, 8, 1, 3),
}


# ---- models/gpt_oss/__init__.py: gptoss_configs and model_registry -----------------------------------


@dataclass(frozen=True)
class GptOss:
    """_debugmodel, _20b, _120b: _build_gptoss_layers (fused, biased QKV of 64 query and 8 KV heads of 64 with
    sinks, a 128-token window on the even layers; GptOssMoE of num_experts GptOssGroupedExperts of hidden 2880,
    top 4), CosSinRoPE theta 150000, YaRN x32, max_seq_len 131072; untied."""

    n_layers: int
    dim: int
    vocab_size: int
    num_experts: int
    n_heads: int = 64
    n_kv_heads: int = 8
    head_dim: int = 64
    moe_hidden_dim: int = 2880
    top_k: int = 4
    max_seq_len: int = 131072
    enable_weight_tying: bool = False


GPT_OSS_CONFIGS = {"debugmodel": GptOss(4, 256, 2048, 8), "20b": GptOss(24, 2880, 201088, 32),
                   "120b": GptOss(36, 2880, 201088, 128)}


@dataclass(frozen=True)
class ModelSpec:  # protocols/model_spec.py (name, flavor, model; converters applied to the model)
    name: str
    flavor: str
    model: Union[Llama3, Qwen3, Qwen3Moe, DeepSeekV3, GptOss]
    converters: tuple = ()


def model_registry(flavor: str, attn_backend: str = "flex", tp_gemm_backend: str = "default",
                   converters: Optional[list] = None) -> ModelSpec:
    assert attn_backend in ("flex", "sdpa", "varlen") and tp_gemm_backend in ("default", "dist_gemm")
    return ModelSpec("llama3", flavor, LLAMA3_CONFIGS[flavor], tuple(converters or ()))


def qwen3_model_registry(flavor: str, attn_backend: str = "flex", moe_comm_backend: Optional[str] = None,
                         converters: Optional[list] = None) -> ModelSpec:
    """models/qwen3/__init__.py model_registry (the debug dense models are not stood in for)."""
    assert attn_backend in ("flex", "sdpa", "varlen", "flex_flash")
    assert moe_comm_backend in (None, "standard", "deepep", "hybridep", "minimal_async_ep")
    return ModelSpec("qwen3", flavor, {**QWEN3_CONFIGS, **QWEN3_MOE_CONFIGS}[flavor], tuple(converters or ()))


def deepseek_v3_model_registry(flavor: str, attn_backend: str = "flex", moe_comm_backend: str = "standard",
                               non_blocking_capacity_factor: Optional[float] = None,
                               converters: Optional[list] = None, num_mtp_layers: int = 0) -> ModelSpec:
    """models/deepseek_v3/__init__.py model_registry (the stand-in builds no MTP layers: planner writes none)."""
    assert attn_backend in ("flex", "sdpa", "varlen", "flex_flash") and num_mtp_layers == 0
    assert moe_comm_backend in ("standard", "deepep", "hybridep", "minimal_async_ep")
    return ModelSpec("deepseek_v3", flavor, DEEPSEEK_V3_CONFIGS[flavor], tuple(converters or ()))


def gpt_oss_model_registry(flavor: str, moe_comm_backend: str = "standard", attn_backend: str = "varlen",
                           converters: Optional[list] = None) -> ModelSpec:
    """models/gpt_oss/__init__.py model_registry."""
    assert attn_backend in ("flex", "sdpa", "varlen") and moe_comm_backend in ("standard", "deepep", "hybridep")
    return ModelSpec("gpt_oss", flavor, GPT_OSS_CONFIGS[flavor], tuple(converters or ()))


def decoder_vocab_size(model_spec: ModelSpec) -> int:  # models/common/config_utils.py
    return model_spec.model.vocab_size


# ---- trainer.py Trainer.Config ------------------------------------------------------------------

ACConfig = Union[SelectiveAC.Config, FullAC.Config, MemoryBudgetAC.Config, None]  # ActivationCheckpointingConfig


class Trainer:
    @dataclass(kw_only=True, slots=True)
    class Config:
        model_spec: Optional[ModelSpec] = None
        hf_assets_path: str = "./tests/assets/tokenizer"
        dump_folder: str = "./outputs"
        profiler: object = None
        metrics: object = None
        tokenizer: object = None
        dataloader: object = None  # stand-in: the recipe's dataset name
        optimizer: object = None  # stand-in: the recipe's learning rate
        lr_scheduler: object = None
        training: TrainingConfig = field(default_factory=TrainingConfig)
        parallelism: ParallelismConfig = field(default_factory=ParallelismConfig)
        checkpoint: object = None
        activation_checkpoint: ACConfig = field(default_factory=SelectiveAC.Config)
        compile: CompileConfig = field(default_factory=CompileConfig)
        comm: object = None
        validator: object = None
        debug: object = None
        override: object = None
        loss: object = None


# ---- models/llama3/config_registry.py: the recipes a configuration derives from ----------------


def _recipe(flavor: str, assets: str, dataset: str, lr: float, training: TrainingConfig, **kw) -> Trainer.Config:
    spec = kw.pop("model_spec", None) or model_registry(flavor)
    loss = ChunkedLossWrapper.Config(loss_fn=CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(spec)))
    return Trainer.Config(model_spec=spec, hf_assets_path=assets, dataloader=dataset, optimizer=lr, loss=loss,
                          training=training, **kw)


def llama3_debugmodel() -> Trainer.Config:
    return _recipe("debugmodel", "./tests/assets/tokenizer", "c4_test", 8e-4,
                   TrainingConfig(local_batch_size=8, seq_len=2048, steps=10),
                   parallelism=ParallelismConfig(pipeline_parallel_schedule="Interleaved1F1B"))


def llama3_8b() -> Trainer.Config:
    return _recipe("8B", "./assets/hf/Llama-3.1-8B", "c4", 3e-4,
                   TrainingConfig(local_batch_size=1, seq_len=8192, steps=1000))


def llama3_70b() -> Trainer.Config:
    return _recipe("70B", "./assets/hf/Llama-3.1-70B", "c4", 1.5e-4,
                   TrainingConfig(local_batch_size=8, seq_len=8192, steps=1000),
                   parallelism=ParallelismConfig(tensor_parallel_degree=8), activation_checkpoint=FullAC.Config())


def llama3_405b() -> Trainer.Config:
    fp8 = Float8LinearConverter.Config(filter_fqns=["lm_head"], model_compile_enabled=True)
    return _recipe("405B", "./assets/hf/Llama-3.1-405B", "c4", 8e-5,
                   TrainingConfig(local_batch_size=2, seq_len=8192, steps=3000),
                   model_spec=model_registry("405B", converters=[fp8]),
                   parallelism=ParallelismConfig(tensor_parallel_degree=8), activation_checkpoint=FullAC.Config(),
                   compile=CompileConfig(enable=True, enable_async_tensor_parallel=True))


def _qwen3_recipe(flavor: str, lr: float, local: int, steps: int, ac: object, **kw) -> Trainer.Config:
    """models/qwen3/config_registry.py: hf_assets_path ./assets/hf/Qwen3-<flavor>, dataset c4, seq_len 4096."""
    return _recipe(flavor, f"./assets/hf/Qwen3-{flavor}", "c4", lr,
                   TrainingConfig(local_batch_size=local, seq_len=4096, steps=steps),
                   model_spec=qwen3_model_registry(flavor), activation_checkpoint=ac, **kw)


def qwen3_0_6b() -> Trainer.Config:
    return _qwen3_recipe("0.6B", 3e-4, 4, 10, SelectiveAC.Config())


def qwen3_1_7b() -> Trainer.Config:
    return _qwen3_recipe("1.7B", 8e-4, 4, 100, SelectiveAC.Config())


def qwen3_14b() -> Trainer.Config:
    return _qwen3_recipe("14B", 8e-4, 4, 3000, FullAC.Config(), parallelism=ParallelismConfig())


def qwen3_32b() -> Trainer.Config:
    return _qwen3_recipe("32B", 8e-4, 2, 3000, FullAC.Config(), parallelism=ParallelismConfig())


def qwen3_moe_debug() -> Trainer.Config:  # models/qwen3/config_registry.py
    return _recipe("debugmodel_moe", "./tests/assets/tokenizer", "c4_test", 3e-4,
                   TrainingConfig(local_batch_size=4, seq_len=4096, steps=10),
                   model_spec=qwen3_model_registry("debugmodel_moe"),
                   parallelism=ParallelismConfig(expert_parallel_degree=1))


def qwen3_30b_a3b() -> Trainer.Config:  # models/qwen3/config_registry.py
    return _recipe("30B-A3B", "./assets/hf/Qwen3-30B-A3B", "c4", 8e-4,
                   TrainingConfig(local_batch_size=2, seq_len=4096, steps=3000),
                   model_spec=qwen3_model_registry("30B-A3B"), parallelism=ParallelismConfig(),
                   activation_checkpoint=FullAC.Config())


def _dsv3_recipe(flavor: str, assets: str, dataset: str, lr: float, training: TrainingConfig,
                 parallelism: ParallelismConfig, compiled: bool) -> Trainer.Config:
    """models/deepseek_v3/config_registry.py: SelectiveAC, the loss compiled where the recipe compiles it."""
    return _recipe(flavor, assets, dataset, lr, training, model_spec=deepseek_v3_model_registry(flavor),
                   parallelism=parallelism, activation_checkpoint=SelectiveAC.Config(),
                   compile=CompileConfig(enable=True, components=["loss"]) if compiled else CompileConfig())


def deepseek_v3_debugmodel() -> Trainer.Config:
    return _dsv3_recipe("debugmodel", "./tests/assets/tokenizer", "c4_test", 8e-4,
                        TrainingConfig(local_batch_size=8, seq_len=2048, steps=10),
                        ParallelismConfig(expert_parallel_degree=1), False)


def deepseek_v3_16b() -> Trainer.Config:
    return _dsv3_recipe("16B", "./assets/hf/deepseek-moe-16b-base", "c4", 2.2e-4,
                        TrainingConfig(local_batch_size=4, seq_len=4096, steps=1000, disable_cuda_graphs=True),
                        ParallelismConfig(pipeline_parallel_schedule="Interleaved1F1B", expert_parallel_degree=8),
                        True)


def deepseek_v3_671b() -> Trainer.Config:
    return _dsv3_recipe("671B", "./assets/hf/DeepSeek-V3.1-Base", "c4", 2.2e-4,
                        TrainingConfig(local_batch_size=4, seq_len=4096, steps=10000, disable_cuda_graphs=True),
                        ParallelismConfig(pipeline_parallel_schedule="Interleaved1F1B", expert_parallel_degree=2),
                        True)


def gpt_oss_debugmodel() -> Trainer.Config:  # models/gpt_oss/config_registry.py: no activation checkpointing
    return _recipe("debugmodel", "./tests/assets/tokenizer", "c4_test", 8e-4,
                   TrainingConfig(local_batch_size=8, seq_len=2048, steps=10),
                   model_spec=gpt_oss_model_registry("debugmodel"),
                   parallelism=ParallelismConfig(expert_parallel_degree=1), activation_checkpoint=None)


def _gpt_oss_recipe(flavor: str) -> Trainer.Config:
    return _recipe(flavor, f"./assets/hf/gpt-oss-{flavor}", "c4", 8e-4,
                   TrainingConfig(local_batch_size=1, seq_len=8192, steps=10000),
                   model_spec=gpt_oss_model_registry(flavor),
                   parallelism=ParallelismConfig(expert_parallel_degree=1), activation_checkpoint=FullAC.Config())


def gpt_oss_20b() -> Trainer.Config:
    return _gpt_oss_recipe("20b")


def gpt_oss_120b() -> Trainer.Config:
    return _gpt_oss_recipe("120b")


# ---- running a configuration module against the stand-ins --------------------------------------

MODULES = {
    "torchtitan.components.loss": {"ChunkedLossWrapper": ChunkedLossWrapper, "CrossEntropyLoss": CrossEntropyLoss},
    "torchtitan.components.quantization": {"Float8LinearConverter": Float8LinearConverter,
                                           "Float8GroupedExpertsConverter": Float8GroupedExpertsConverter,
                                           "MXFP8LinearConverter": MXFP8LinearConverter,
                                           "MXFP8GroupedExpertsConverter": MXFP8GroupedExpertsConverter},
    "torchtitan.config": {"CompileConfig": CompileConfig, "ParallelismConfig": ParallelismConfig,
                          "TrainingConfig": TrainingConfig},
    "torchtitan.distributed.activation_checkpoint": {"FullAC": FullAC, "SelectiveAC": SelectiveAC,
                                                     "MemoryBudgetAC": MemoryBudgetAC},
    "torchtitan.models.common.config_utils": {"decoder_vocab_size": decoder_vocab_size},
    "torchtitan.models.llama3": {"model_registry": model_registry},
    "torchtitan.models.llama3.config_registry": {"llama3_debugmodel": llama3_debugmodel, "llama3_8b": llama3_8b,
                                                 "llama3_70b": llama3_70b, "llama3_405b": llama3_405b},
    "torchtitan.models.qwen3": {"model_registry": qwen3_model_registry},
    "torchtitan.models.qwen3.config_registry": {"qwen3_0_6b": qwen3_0_6b, "qwen3_1_7b": qwen3_1_7b,
                                                "qwen3_14b": qwen3_14b, "qwen3_32b": qwen3_32b,
                                                "qwen3_moe_debug": qwen3_moe_debug, "qwen3_30b_a3b": qwen3_30b_a3b},
    "torchtitan.models.deepseek_v3": {"model_registry": deepseek_v3_model_registry},
    "torchtitan.models.deepseek_v3.config_registry": {"deepseek_v3_debugmodel": deepseek_v3_debugmodel,
                                                      "deepseek_v3_16b": deepseek_v3_16b,
                                                      "deepseek_v3_671b": deepseek_v3_671b},
    "torchtitan.models.gpt_oss": {"model_registry": gpt_oss_model_registry},
    "torchtitan.models.gpt_oss.config_registry": {"gpt_oss_debugmodel": gpt_oss_debugmodel,
                                                  "gpt_oss_20b": gpt_oss_20b, "gpt_oss_120b": gpt_oss_120b},
    "torchtitan.trainer": {"Trainer": Trainer},
}


def _install() -> dict:
    """Stand-in torchtitan modules (and their parent packages) for sys.modules."""
    mods = {}
    for name, attrs in MODULES.items():
        parts = name.split(".")
        for i in range(1, len(parts)):
            mods.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        mods[name] = types.ModuleType(name)
        mods[name].__dict__.update(attrs)
    return mods


def run(source: str, function: str = "planner_job") -> Trainer.Config:
    """Execute a configuration module (ConfigManager._load_config: import --module, call --config)."""
    saved = {k: v for k, v in sys.modules.items() if k == "torchtitan" or k.startswith("torchtitan.")}
    try:
        sys.modules.update(_install())
        namespace: dict = {"__name__": "planner_job"}
        exec(compile(source, "planner_job.py", "exec"), namespace)  # noqa: S102 - the module under test
        return namespace[function]()
    finally:
        for k in [k for k in sys.modules if k == "torchtitan" or k.startswith("torchtitan.")]:
            del sys.modules[k]
        sys.modules.update(saved)


# ---- the schema: every field's value against its annotation -------------------------------------

# The one value outside an annotation that torchtitan's loader keeps, with a tyro UserWarning
# ("annotated with type Literal['float32'], but the default value bfloat16 ... handle this
# gracefully"), checked with torchtitan 0.3.0's ConfigManager; parallelize_llama passes it on
# through TORCH_DTYPE_MAP (config/__init__.py has "bfloat16") to FSDP2's MixedPrecisionPolicy.
LOADER_WARNS = {("training", "mixed_precision_reduce"): ("bfloat16",)}


def conforms(value: object, tp: object) -> bool:
    origin = typing.get_origin(tp)
    if tp is object:
        return True
    if origin is Literal:
        return value in typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return any(conforms(value, arg) for arg in typing.get_args(tp))
    if origin is list:
        return isinstance(value, list) and all(conforms(v, typing.get_args(tp)[0]) for v in value)
    if tp is type(None):
        return value is None
    if tp in (int, float):
        return isinstance(value, (int, float) if tp is float else int) and not isinstance(value, bool)
    return isinstance(value, tp)


def schema_issues(obj: object, path: str = "") -> tuple[list[str], list[str]]:
    """(errors, loader warnings) for every dataclass field of the tree rooted at obj."""
    errors, warnings = [], []
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value, where = getattr(obj, f.name), f"{path}{f.name}"
        if not conforms(value, hints[f.name]):
            allowed = LOADER_WARNS.get(tuple(where.split(".")), ())
            (warnings if value in allowed else errors).append(f"{where}={value!r} is not {hints[f.name]}")
        if dataclasses.is_dataclass(value) and not isinstance(value, (Llama3, Qwen3, Qwen3Moe, DeepSeekV3, GptOss,
                                                                       ModelSpec)):
            e, w = schema_issues(value, f"{where}.")
            errors, warnings = errors + e, warnings + w
    return errors, warnings


# ---- the checks torchtitan runs before the first step --------------------------------------------


def trainer_config_checks(c: Trainer.Config) -> list[str]:
    """trainer.py Trainer.Config.__post_init__ and _validate_cuda_graphs (tyro rebuilds the config
    from the module's values, so they run on the final ones); config/configs.py __post_init__s."""
    p, t, out = c.parallelism, c.training, []
    if p.pipeline_parallel_microbatch_size <= 0:
        out.append("pipeline_parallel_microbatch_size must be greater than 0")
    if p.pipeline_parallel_degree > 1 and t.local_batch_size % p.pipeline_parallel_microbatch_size:
        out.append("local_batch_size must be divisible by pipeline_parallel_microbatch_size")
    if not t.disable_cuda_graphs and p.pipeline_parallel_degree > 1:
        out.append("CUDA graphs do not support pipeline parallelism yet. Set --training.disable_cuda_graphs.")
    elif not t.disable_cuda_graphs and p.expert_parallel_degree > 1 and isinstance(c.model_spec.model,
                                                                                   (Qwen3Moe, DeepSeekV3, GptOss)):
        # _validate_cuda_graphs: model_registry's default comm backend, "standard", is AllToAllTokenDispatcher
        out.append("CUDA graphs support only expert parallel token dispatcher configurations without CPU "
                   "synchronization. Unsupported token dispatcher: AllToAllTokenDispatcher.Config.")
    if isinstance(c.activation_checkpoint, MemoryBudgetAC.Config) and not (
            c.compile.enable and "model" in c.compile.components):
        out.append("Memory budget activation checkpointing requires the model to be compiled")
    if c.compile.enable_async_tensor_parallel and not (c.compile.enable and "model" in c.compile.components):
        out.append("Async TP requires 'model' in --compile.components and --compile.enable")
    if p.context_parallel_load_balancer == "":
        out.append("context_parallel_load_balancer cannot be an empty string")
    return out


def parallel_dims(p: ParallelismConfig, world: int) -> tuple[list[str], dict]:
    """distributed/parallel_dims.py ParallelDims._validate: degrees >= 1 (dp_shard -1 = the rest),
    dp_replicate * dp_shard * cp * tp * pp == WORLD_SIZE; build_mesh unflattens the sparse mesh
    (pp, dp_replicate, efsdp, ep) with efsdp = dp_shard * cp * tp // ep, so ep must divide
    dp_shard * cp * tp (config/configs.py expert_parallel_degree: "dp_shard * cp * tp == efsdp * ep")."""
    rep, shard, cp, tp, pp = (p.data_parallel_replicate_degree, p.data_parallel_shard_degree,
                              p.context_parallel_degree, p.tensor_parallel_degree, p.pipeline_parallel_degree)
    if min(rep, cp, tp, pp, p.expert_parallel_degree) < 1 or not (shard == -1 or shard >= 1):
        return ["Parallelism degree should be >= 1, except for dp_shard"], {}
    shard = world // (rep * cp * tp * pp) if shard < 0 else shard
    if shard < 1 or rep * shard * cp * tp * pp != world:
        return [f"Invalid parallel dims: {rep} * {shard} * {cp} * {tp} * {pp} != WORLD_SIZE({world})"], {}
    ep = p.expert_parallel_degree
    if (shard * cp * tp) % ep:
        return [f"expert_parallel_degree {ep} does not divide dp_shard * cp * tp = {shard * cp * tp}"], {}
    return [], {"dp_replicate": rep, "dp_shard": shard, "tp": tp, "pp": pp, "cp": cp, "ep": ep,
                "efsdp": shard * cp * tp // ep if ep > 1 else None}  # the efsdp mesh exists with EP only


def model_checks(c: Trainer.Config, dims: dict) -> list[str]:
    """models/common/decoder.py Decoder.Config.update_from_config and trainer.py's sequence divisor."""
    m, p, t, out = c.model_spec.model, c.parallelism, c.training, []
    if m.enable_weight_tying and p.pipeline_parallel_degree > 1:
        out.append("Weight tying is not supported with Pipeline Parallel.")
    tp = p.tensor_parallel_degree
    if tp > 1 and (m.n_heads % tp or m.n_kv_heads % tp):
        out.append("tensor_parallel_degree must divide n_heads and n_kv_heads")
    if isinstance(m, (Qwen3Moe, DeepSeekV3, GptOss)) and m.num_experts % dims["ep"]:  # common/token_dispatcher.py
        out.append(f"num_experts {m.num_experts} not divisible by ep {dims['ep']} "
                   "(tokens per expert viewed as (ep_size, -1))")
    if t.seq_len > m.max_seq_len:
        out.append(f"Training sequence length {t.seq_len} exceeds attention RoPE maximum {m.max_seq_len}")
    divisor = (dims["tp"] if p.enable_sequence_parallel else 1) * (2 * dims["cp"] if dims["cp"] > 1 else 1)
    if t.seq_len % divisor:
        out.append(f"Training sequence length ({t.seq_len}) must be divisible by {divisor}")
    if isinstance(c.loss, ChunkedLossWrapper.Config) and t.seq_len % c.loss.num_chunks:
        out.append("ChunkedLossWrapper sequence length must be divisible by num_chunks")  # components/loss.py
    return out


def batch(c: Trainer.Config, dims: dict) -> tuple[list[str], dict]:
    """trainer.py: global batch -1 = local x batch degree (dp_replicate x dp_shard); it must be a
    multiple of that; accumulation steps = global / (local x degree); pipeline micro-batches =
    local / pipeline_parallel_microbatch_size (1 without pipeline parallelism)."""
    t, degree = c.training, dims["dp_replicate"] * dims["dp_shard"]
    gbs = t.global_batch_size if t.global_batch_size > 0 else t.local_batch_size * degree
    if gbs % (t.local_batch_size * degree):
        return ["global batch size must be multiple of local batch size times data-parallel degree"], {}
    pp_mb = t.local_batch_size // c.parallelism.pipeline_parallel_microbatch_size if dims["pp"] > 1 else 1
    return [], {"global_batch_size": gbs, "local_batch_size": t.local_batch_size,
                "grad_accum_steps": gbs // (t.local_batch_size * degree), "pp_microbatches": pp_mb}


SINGLE_STAGE = ("1F1B", "GPipe")  # torch.distributed.pipelining PipelineScheduleSingle subclasses
MULTI_STAGE = ("Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV")


def pipeline(c: Trainer.Config, dims: dict, n_microbatches: int) -> tuple[list[str], list[list[str]]]:
    """distributed/pipeline_parallel.py: stages from module_fqns_per_model_part (else generated),
    num_stages % pp == 0, a single-stage schedule has one stage per rank; torch schedules.py
    ScheduleInterleaved1F1B: m % max(1, m // pp) == 0. Every module of the model in exactly one
    stage, in order (_split_module keeps the named modules)."""
    p, pp, out = c.parallelism, dims["pp"], []
    stages = p.module_fqns_per_model_part
    if pp == 1:
        return out, []
    if stages is None:
        return ["planner always writes module_fqns_per_model_part with pipeline parallelism"], []
    n = c.model_spec.model.n_layers
    expected = ["tok_embeddings"] + [f"layers.{i}" for i in range(n)] + ["norm", "lm_head"]
    if [m for s in stages for m in s] != expected:
        out.append("module_fqns_per_model_part does not hold every module once, in order")
    if len(stages) % pp:
        out.append(f"num_stages {len(stages)} must be evenly divisible by pp_degree {pp}")
    schedule = p.pipeline_parallel_schedule
    if schedule not in SINGLE_STAGE + MULTI_STAGE:
        out.append(f"unknown pipeline schedule {schedule}")
    if schedule in SINGLE_STAGE and len(stages) != pp:
        out.append(f"single-stage schedule {schedule} runs one stage per rank, got {len(stages)} stages")
    if schedule == "Interleaved1F1B" and n_microbatches % max(1, n_microbatches // pp):
        out.append("Interleaved1F1B: number of microbatches must be a multiple of the number of rounds")
    return out, stages


def ac_name(ac: object) -> str:
    return {SelectiveAC.Config: "selective", FullAC.Config: "full", MemoryBudgetAC.Config: "memory-budget",
            type(None): "none"}[type(ac)]


def check(c: Trainer.Config, world: int) -> tuple[list[str], list[str], dict]:
    """(errors, loader warnings, the values torchtitan would run with) for a world of `world` ranks."""
    if not isinstance(c, Trainer.Config) or not isinstance(c.model_spec, ModelSpec):
        return ["the configuration function must return a Trainer.Config with a model_spec"], [], {}
    errors, warnings = schema_issues(c)
    for conv in c.model_spec.converters:
        e, w = schema_issues(conv, "model_spec.converters.")
        errors, warnings = errors + e, warnings + w
    errors += trainer_config_checks(c)
    dims_errors, dims = parallel_dims(c.parallelism, world)
    if dims_errors:
        return errors + dims_errors, warnings, {}
    errors += model_checks(c, dims)
    batch_errors, parsed = batch(c, dims)
    errors += batch_errors
    if batch_errors:
        return errors, warnings, {}
    pp_errors, stages = pipeline(c, dims, parsed["pp_microbatches"])
    return errors + pp_errors, warnings, {**parsed, **dims, **values(c), "stages": stages}


def values(c: Trainer.Config) -> dict:
    t, p, conv = c.training, c.parallelism, c.model_spec.converters
    return {"flavor": c.model_spec.flavor, "model": c.model_spec.name, "sequence_parallel": p.enable_sequence_parallel,
            "schedule": p.pipeline_parallel_schedule if p.pipeline_parallel_degree > 1 else None,
            "pp_microbatch_size": p.pipeline_parallel_microbatch_size,
            "reshard_after_forward": p.fsdp_reshard_after_forward, "seq_len": t.seq_len, "steps": t.steps,
            "dtype": t.dtype, "param_dtype": t.mixed_precision_param, "reduce_dtype": t.mixed_precision_reduce,
            "cuda_graphs": not t.disable_cuda_graphs, "ac": ac_name(c.activation_checkpoint),
            "compile": c.compile.components if c.compile.enable else [],
            "async_tp": c.compile.enable_async_tensor_parallel,
            "float8": [{"filter_fqns": f.filter_fqns, "recipe": f.recipe_name, "compiled": f.model_compile_enabled}
                       for f in conv if isinstance(f, Float8LinearConverter.Config)],
            "mxfp8": [{"fqns": f.fqns, "compiled": f.model_compile_enabled}
                      for f in conv if isinstance(f, MXFP8LinearConverter.Config)],
            "grouped_experts": [{"format": "float8" if isinstance(f, Float8GroupedExpertsConverter.Config) else "mxfp8",
                                 "compiled": f.model_compile_enabled, "pad": getattr(f, "pad_multiple", 16)}
                                for f in conv if isinstance(f, (Float8GroupedExpertsConverter.Config,
                                                                MXFP8GroupedExpertsConverter.Config))],
            "loss": "chunked" if isinstance(c.loss, ChunkedLossWrapper.Config) else "cross_entropy",
            "hf_assets_path": c.hf_assets_path, "dataset": c.dataloader}
