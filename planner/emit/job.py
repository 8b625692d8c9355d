"""What an emitter works from: the model, the plan, the machine layout and the estimate.

A Job is built from one estimate object (`planner estimate --json`) and the model spec it was
scored with. Everything here is framework-neutral; what each framework runs and refuses lives in
planner/frameworks, which `refuse_unless_runs` applies.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from costmodel import types as cm
from costmodel.lowp import LOW_PRECISIONS
from costmodel.rules import model_plan_violations
from planner import frameworks
from planner.errors import PlannerError
from planner.frameworks.base import Machine
from planner.inputs import catalogs, plans
from planner.inputs.specs import ModelSpec


@dataclass(frozen=True)
class EmitOptions:
    """Choices that are not part of a plan: machine layout and DeepSpeed offload.

    The cost model does not model offload, so offload changes memory and time in ways the
    estimate does not show; README.txt says so when it is on.
    """

    gpus_per_node: int | None = None
    offload_optimizer: str = "none"
    offload_param: str = "none"
    nvme_path: str | None = None


@dataclass(frozen=True)
class Job:
    model: ModelSpec
    plan: cm.Plan
    num_gpus: int
    gpus_per_node: int
    estimate: dict = field(repr=False)
    options: EmitOptions = EmitOptions()

    @property
    def nnodes(self) -> int:
        return self.num_gpus // self.gpus_per_node

    @property
    def summary(self) -> str:
        p = self.plan
        return (f"tp={p.tp} pp={p.pp} vpp={p.vpp} dp={p.dp} zero={p.zero_stage} mbs={p.micro_batch_size} "
                f"gbs={p.global_batch_size} on {self.num_gpus} GPUs ({self.nnodes} x {self.gpus_per_node})")

    @property
    def half_dtype(self) -> str | None:
        """The 16-bit type the model trains in (fp8, mxfp8 and nvfp4 GEMMs keep bf16 parameters), None for fp32."""
        return {"fp16": "fp16", "bf16": "bf16", **dict.fromkeys(LOW_PRECISIONS, "bf16")}.get(self.plan.precision)

    @property
    def title(self) -> str:
        """'<model>: <plan summary>' for a shell comment line: printable characters only, so no
        name can end the comment and start a command (names are checked at the edge too)."""
        text = f"{self.model.name}: {self.summary}"
        return "".join(ch if ch.isprintable() else "?" for ch in text)

    @property
    def cm_model(self) -> cm.Model:
        return self.model.to_model()

    @cached_property
    def machine(self) -> Machine:
        """What the frameworks' machine rules read: the GPU's generation from the catalog (None for a GPU
        it does not name), this job's node and NVLink domain sizes, and RDMA from the catalog cluster the
        plan was scored on (None, not known, for a cluster YAML)."""
        try:
            generation = catalogs.resolve_gpu(str(self.estimate.get("gpu", ""))).generation
        except PlannerError:
            generation = None
        spec = catalogs.cluster_catalog().get(str(self.estimate.get("cluster")))
        # the cluster's node, not this job's share of it: 4 GPUs of an 8-GPU NVLink node are still one node
        node = self.estimate.get("gpus_per_node")
        node = node if isinstance(node, int) and not isinstance(node, bool) and node > self.gpus_per_node \
            else self.gpus_per_node
        return Machine(generation, node, self.nvlink_domain_size, spec.rdma if spec else None)

    @property
    def nvlink_domain_size(self) -> int:
        """GPUs sharing one NVLink domain on the plan's cluster (estimate `nvlink_domain_size`), else a node."""
        size = self.estimate.get("nvlink_domain_size")
        return size if isinstance(size, int) and not isinstance(size, bool) and size >= 1 else self.gpus_per_node


def refuse_unless_runs(job: Job, name: str) -> None:
    """Raise one PlannerError line naming every rule the plan breaks, the cost model's structural ones
    (costmodel/rules.py) and framework `name`'s (planner/frameworks), its machine rules included, before
    anything is written."""
    fw = frameworks.get(name)
    broken = model_plan_violations(job.cm_model, job.plan) + frameworks.violations(fw, job.cm_model, job.plan,
                                                                                   job.machine)
    if broken:
        raise PlannerError(f"{fw.title} would reject this plan: " + "; ".join(broken))


def check_seq_length(estimate: dict, model: ModelSpec, plan: cm.Plan) -> None:
    """The sequence length PLAN.json was scored at must be the model's: its `seq_length` (which
    loading.load_estimate checked against tokens_per_s x step_time_s / global batch), or for files
    without it that product alone."""
    tps, step, seq = estimate.get("tokens_per_s"), estimate.get("step_time_s"), estimate.get("seq_length")
    if seq is None and tps and step:
        seq = round(tps * step / plan.global_batch_size)
    if seq is None:
        return
    if seq != model.seq_length:
        raise PlannerError(f"PLAN.json was scored with seq_length {seq} but model '{model.name}' has "
                           f"{model.seq_length}; pass --seq-length {seq}")


def resolve_gpus_per_node(estimate: dict, num_gpus: int, given: int | None) -> int:
    """--gpus-per-node, else the plan's own cluster shape (estimate `gpus_per_node`), else the
    catalog cluster's, else 8; a job smaller than a node uses num_gpus. A --gpus-per-node other than the
    shape the plan was scored on is refused."""
    scored = estimate.get("gpus_per_node")
    if given is not None and (not isinstance(given, int) or isinstance(given, bool) or given < 1):
        raise PlannerError(f"gpus_per_node must be a positive integer (got {given!r})")
    if given is not None and isinstance(scored, int) and not isinstance(scored, bool) and given != scored:
        raise PlannerError(f"--gpus-per-node {given}: PLAN.json was scored on nodes of {scored} GPUs, and its "
                           "layout (which ranks share a node's NVLink) was chosen for them: score it on the other "
                           "machine (planner estimate with that cluster) and emit that")
    per_node = given if given is not None else scored
    if per_node is None:
        spec = catalogs.cluster_catalog().get(str(estimate.get("cluster")))
        per_node = spec.gpus_per_node if spec else 8
    if not isinstance(per_node, int) or isinstance(per_node, bool) or per_node < 1:
        raise PlannerError(f"gpus_per_node must be a positive integer (got {per_node!r})")
    per_node = min(per_node, num_gpus)
    if num_gpus % per_node:
        raise PlannerError(f"{num_gpus} GPUs do not fill whole nodes of {per_node}; pass --gpus-per-node")
    return per_node


def build_job(model: ModelSpec, estimate: dict, options: EmitOptions | None = None) -> Job:
    """Check the estimate against the model and resolve the machine layout."""
    if not isinstance(estimate, dict):
        raise PlannerError("PLAN.json: expected one estimate object (a JSON mapping)")
    options = options or EmitOptions()
    name = estimate.get("model")
    if name is not None and name != model.name:
        raise PlannerError(f"PLAN.json was scored for model '{name}' but the model given is '{model.name}'")
    plan, num_gpus = plans.plan_of_estimate(estimate, model)
    check_seq_length(estimate, model, plan)
    per_node = resolve_gpus_per_node(estimate, num_gpus, options.gpus_per_node)
    return Job(model, plan, num_gpus, per_node, estimate, options)
