"""Input specs at the YAML edge (human units in key names), validated with pydantic.

Unknown keys are rejected; every error names the field. `to_*` methods convert to the cost
model's SI dataclasses.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from costmodel import types as cm
from costmodel.compute import power_capped_clock_fraction

GIB = 2**30


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSpec(Spec):
    name: str
    num_layers: PositiveInt
    hidden_size: PositiveInt
    num_attention_heads: PositiveInt
    vocab_size: PositiveInt
    seq_length: PositiveInt
    num_kv_heads: Optional[PositiveInt] = None
    ffn_hidden_size: Optional[PositiveInt] = None
    mlp: Literal["gelu", "swiglu"] = "gelu"
    tie_embeddings: bool = False
    dropout: bool = False
    global_batch_size: Optional[PositiveInt] = None
    training_tokens: Optional[float] = Field(default=None, gt=0)
    source: Optional[str] = None
    notes: Optional[str] = None

    @model_validator(mode="after")
    def _shapes(self) -> "ModelSpec":
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                             f"({self.num_attention_heads})")
        kv = self.num_kv_heads or self.num_attention_heads
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
            tie_embeddings=self.tie_embeddings, dropout=self.dropout,
        )


class GpuSpec(Spec):
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google", "other"] = "nvidia"
    generation: Literal["volta", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4", "other"]
    memory_gib: float = Field(gt=0)
    dense_tflops: dict[Literal["fp32", "tf32", "bf16", "fp16", "fp8", "fp4"], float]
    hbm_bandwidth_gbytes_per_s: float = Field(gt=0)
    nvlink_bandwidth_gbytes_per_s: float = Field(default=0.0, ge=0)
    measured_matmul_bf16_tflops: Optional[float] = Field(default=None, gt=0)
    tdp_watts: Optional[float] = Field(default=None, gt=0)  # rated board power the peaks hold at
    power_limit_watts: Optional[float] = Field(default=None, gt=0)  # a lower cap the GPU runs under
    source: Optional[str] = None
    verified: Optional[bool] = None
    notes: Optional[str] = None

    @model_validator(mode="after")
    def _peaks(self) -> "GpuSpec":
        if "bf16" not in self.dense_tflops and "fp16" not in self.dense_tflops:
            raise ValueError("dense_tflops needs at least a bf16 or fp16 entry")
        if any(v <= 0 for v in self.dense_tflops.values()):
            raise ValueError("dense_tflops values must be > 0")
        if self.power_limit_watts is not None and self.tdp_watts is None:
            raise ValueError("power_limit_watts needs tdp_watts (the board power the peaks are rated at)")
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
            tensor_clock_fraction=power_capped_clock_fraction(self.power_limit_watts or 0.0, self.tdp_watts or 0.0),
            tdp_watts=self.tdp_watts or 0.0,
        )


class CalibrationSpec(Spec):
    """Where a cluster file's measured figures came from (written by `planner calibrate`)."""

    date: str
    tool: str = "planner calibrate"
    base: Optional[str] = None  # the cluster file or catalog name that was calibrated
    nccl_logs: list[str] = []
    min_message_bytes: Optional[int] = None
    step_times: Optional[str] = None
    matmul_efficiency_scale_stderr: Optional[float] = None
    notes: Optional[str] = None


class ClusterSpec(Spec):
    name: str
    gpu: str | GpuSpec
    num_gpus: Optional[PositiveInt] = None
    gpus_per_node: PositiveInt = 8
    nvlink_domain_size: Optional[PositiveInt] = None
    nvlink_bandwidth_gbytes_per_s: Optional[float] = Field(default=None, ge=0)
    network_bandwidth_gbits_per_s: float = Field(gt=0)
    rdma: bool = True
    # Measured (e.g. nccl-tests busbw, see `planner calibrate`): used instead of nominal x efficiency.
    nvlink_busbw_gbytes_per_s: Optional[float] = Field(default=None, gt=0)
    network_busbw_gbytes_per_s: Optional[float] = Field(default=None, gt=0)
    nvlink_latency_us: Optional[float] = Field(default=None, ge=0)
    network_latency_us: Optional[float] = Field(default=None, ge=0)
    # Measured (timed steps, `planner calibrate --step-times`): multiplies the achievable matmul efficiency.
    matmul_efficiency_scale: Optional[float] = Field(default=None, gt=0)
    calibrated_from: Optional[CalibrationSpec] = None
    usd_per_gpu_hour: Optional[float] = Field(default=None, ge=0)
    price_kind: Optional[Literal["on-demand", "reserved", "spot"]] = None
    price_date: Optional[str] = None
    price_source: Optional[str] = None
    source: Optional[str] = None
    verified: Optional[bool] = None
    notes: Optional[str] = None

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
        )


class PlanSpec(Spec):
    """A plan as users and `--json` write it."""

    tp: PositiveInt = 1
    pp: PositiveInt = 1
    dp: Optional[PositiveInt] = None
    vpp: PositiveInt = 1
    micro_batch_size: PositiveInt = 1
    global_batch_size: Optional[PositiveInt] = None
    grad_accum_steps: Optional[PositiveInt] = None
    zero_stage: int = Field(default=0, ge=0, le=3)
    recompute: Literal["none", "selective", "op", "full"] = "none"
    sequence_parallel: bool = False
    precision: Literal["fp32", "bf16", "fp16", "fp8"] = "bf16"
    grad_dtype: Optional[Literal["fp32", "bf16", "fp16", "int8"]] = None
    overlap_dp_comm: bool = True
    overlap_pp_comm: bool = True
    flash_attention: bool = True
    fused_elementwise: bool = True
    fused_cross_entropy: bool = True
    zero3_gather_unit: Literal["layer", "tensor"] = "layer"
    grad_reduce: Literal["reduce_scatter", "allreduce"] = "reduce_scatter"
    stage_layers: Optional[tuple[PositiveInt, ...]] = None
