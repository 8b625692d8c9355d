"""Golden, written by hand: Llama 3 8B on one node of 8 GPUs, FSDP2 over all 8 (ZeRO-3).

Plan: tp 1, pp 1, dp 8, ZeRO 3, micro-batch 1, global batch 32, per-op selective recompute, bf16
with gradients reduced in fp32, torch.compile on, fused (chunked) loss, 1000 steps.

Starts from torchtitan 0.3.0's own recipe llama3_8b (torchtitan/models/llama3/config_registry.py,
release/0.3 @ 4f9e9a47: model_registry("8B"), ChunkedLossWrapper over CrossEntropyLoss,
local_batch_size 1, seq_len 8192, steps 1000, SelectiveAC, dataset c4) and changes what the plan
says, in the style of torchtitan_recipes/tests/features.py (llama3_debugmodel_hsdp2x2 and others).
"""
from torchtitan.config import CompileConfig
from torchtitan.models.llama3.config_registry import llama3_8b
from torchtitan.trainer import Trainer


def planner_job() -> Trainer.Config:
    config = llama3_8b()
    # micro-batch 1 per rank; 32 / (1 x 8) = 4 gradient-accumulation steps (trainer.py)
    config.training.local_batch_size = 1
    config.training.global_batch_size = 32
    config.training.mixed_precision_param = "bfloat16"
    config.training.mixed_precision_reduce = "float32"
    # trainer.py graphs the forward and backward unless told not to; the plan was scored without that graph
    config.training.disable_cuda_graphs = True
    # ZeRO-3 = FSDP2 over data_parallel_shard (8 x 1 x 1 x 1 x 1 = WORLD_SIZE 8); no TP, so no SP
    config.parallelism.data_parallel_shard_degree = 8
    config.parallelism.data_parallel_replicate_degree = 1
    config.parallelism.enable_sequence_parallel = False
    # the recipe keeps SelectiveAC (per-op) and chunked loss; torch.compile of model and loss
    config.compile = CompileConfig(enable=True, components=["model", "loss"])
    return config
