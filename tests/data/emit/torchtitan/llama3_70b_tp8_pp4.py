"""Golden, written by hand: Llama 3 70B on 8 nodes of 8 GPUs, tp 8 x pp 4 x dp 2.

Plan: tp 8 (inside a node), pp 4 with 5 interleaved chunks per rank (vpp 5: 20 stages of
80 / 20 = 4 layers), dp 2 with FSDP2 (ZeRO-1 under the pipeline), sequence parallel, micro-batch 1, global batch 64,
full recompute, bf16 with gradients reduced in fp32, torch.compile on, 1000 steps.

Starts from torchtitan 0.3.0's own recipe llama3_70b (torchtitan/models/llama3/config_registry.py,
release/0.3 @ 4f9e9a47: model_registry("70B"), ChunkedLossWrapper over CrossEntropyLoss,
local_batch_size 8, seq_len 8192, steps 1000, tensor_parallel_degree 8, FullAC) and the pipeline
fields of torchtitan_recipes/tests/models.py (deepseek_v3_debugmodel_fsdp2_tp2_pp2_ep4:
Interleaved1F1B, disable_cuda_graphs).
"""
from torchtitan.config import CompileConfig
from torchtitan.models.llama3.config_registry import llama3_70b
from torchtitan.trainer import Trainer


def layers(first: int, last: int) -> list[str]:
    return [f"layers.{i}" for i in range(first, last)]


def planner_job() -> Trainer.Config:
    config = llama3_70b()
    # 64 sequences over dp 2 = 32 per pipeline, all in one schedule as 32 micro-batches of 1:
    # local_batch_size 32, pipeline_parallel_microbatch_size 1, accumulation 64 / (32 x 2) = 1.
    config.training.local_batch_size = 32
    config.training.global_batch_size = 64
    config.training.mixed_precision_param = "bfloat16"
    config.training.mixed_precision_reduce = "float32"
    config.training.disable_cuda_graphs = True  # trainer.py: no CUDA graphs with pipeline parallelism
    p = config.parallelism
    p.data_parallel_shard_degree = 2  # 1 x 2 x 1 x 8 x 4 = WORLD_SIZE 64
    p.data_parallel_replicate_degree = 1
    p.tensor_parallel_degree = 8
    p.enable_sequence_parallel = True
    p.pipeline_parallel_degree = 4
    p.pipeline_parallel_schedule = "Interleaved1F1B"  # 32 micro-batches, 32 // 4 = 8 rounds: 32 % 8 == 0
    p.pipeline_parallel_microbatch_size = 1
    # 20 stages of 4 layers, embedding on the first, final norm and output on the last
    p.module_fqns_per_model_part = (
        [["tok_embeddings", *layers(0, 4)]]
        + [layers(4 * s, 4 * s + 4) for s in range(1, 19)]
        + [[*layers(76, 80), "norm", "lm_head"]]
    )
    # fsdp_reshard_after_forward stays "default": under pipeline parallelism weights stay gathered
    # and gradients unsharded until the step's last backward (ZeRO-1 within the step)
    # the recipe keeps FullAC and chunked loss; torch.compile of model and loss
    config.compile = CompileConfig(enable=True, components=["model", "loss"])
    return config
