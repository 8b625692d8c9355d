"""Load models, GPUs and clusters from files or catalog names; every failure is one PlannerError line."""
from __future__ import annotations

import sys
from pathlib import Path

from costmodel import types as cm
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs import reading
from planner.inputs.catalogs import cluster_catalog, model_catalog, resolve_gpu
from planner.inputs.hf_config import hf_to_spec_dict, looks_like_hf_config, with_hf_keys
from planner.inputs.reading import parse, read_data, unknown_name
from planner.inputs.specs import ClusterSpec, EstimateRecord, ModelSpec


def looks_like_path(ref: str) -> bool:
    """A reference meant as a file (has a folder or a YAML/JSON suffix), not a catalog name."""
    return "/" in ref or Path(ref).suffix in (".yaml", ".yml", ".json")


def load_model_spec(ref: str, seq_length: int | None = None, global_batch_size: int | None = None,
                    need_seq_length: bool = False, seq_length_hint: str = "pass --seq-length") -> ModelSpec:
    """A model from a YAML file, a Hugging Face config.json, or a catalog name. A config.json gives no
    training sequence length: `seq_length`, else (unless `need_seq_length`, as on the command line, where the
    refusal ends with `seq_length_hint`) its max_position_embeddings."""
    path = Path(ref)
    if path.is_dir() and (path / "config.json").is_file():  # a Hugging Face checkpoint's folder
        path = path / "config.json"
    if not path.exists():
        models = model_catalog()
        if ref in models:
            path = models[ref]
        elif not looks_like_path(ref):
            raise unknown_name("model", ref, list(models))
    data = read_data(path)
    imported = looks_like_hf_config(data)
    if imported:
        if need_seq_length and not seq_length:  # max_position_embeddings is the longest context, not the training one
            raise PlannerError(f"{path}: a Hugging Face config does not give the training sequence length "
                               "(max_position_embeddings is the longest context the model supports): "
                               f"{seq_length_hint}")
        return _imported_spec(path, data, seq_length, global_batch_size)
    if isinstance(data, dict) and seq_length:
        data = {**data, "seq_length": seq_length, "seq_length_note": None}  # the note was the catalog length's
    if isinstance(data, dict) and global_batch_size:
        data = {**data, "global_batch_size": global_batch_size}
    spec = parse(ModelSpec, data, str(path))
    if spec.seq_length_note and need_seq_length:  # a command that plans with it (not `catalog models`)
        _queue_note(f"{spec.name}'s seq_length {spec.seq_length} is an assumption ({spec.seq_length_note}): "
                    f"{seq_length_hint} for your run's")
    return spec


def _queue_note(note: str) -> None:
    """A note for the command to print once it succeeds, once per run."""
    if note not in _SAID:
        _SAID.add(note)
        PENDING_NOTES.append(note)


def _imported_spec(path: Path, data: dict, seq_length: int | None, global_batch_size: int | None) -> ModelSpec:
    """The spec of a Hugging Face config.json (a spec error names the config's keys too), its import notes
    queued once."""
    fields = hf_to_spec_dict(data, path.parent.name if path.name == "config.json" else path.stem, seq_length)
    if global_batch_size:
        fields = {**fields, "global_batch_size": global_batch_size}
    try:
        spec = parse(ModelSpec, fields, str(path))
    except PlannerError as err:
        raise PlannerError(with_hf_keys(str(err), data)) from None
    if spec.notes:  # what the import left out
        _queue_note(spec.notes)
    return spec


_SAID: set[str] = set()  # import notes queued in this process (`size --what-if-grid` loads the model again)
# Import notes for the command to print once it succeeds (planner.commands.main.flush_notes): a command
# that then fails prints its one error line alone.
PENDING_NOTES: list[str] = []


def flush_notes(say: bool = True) -> None:
    """Print the queued import notes on stderr (`say`), or drop them; the queue is emptied."""
    if say:
        for note in PENDING_NOTES:
            print(f"planner: note: {note}", file=sys.stderr)
    PENDING_NOTES.clear()


def load_cluster_spec(ref: str) -> ClusterSpec:
    """A cluster from a YAML file or a catalog name; its `gpu` may be a catalog name or inline."""
    path = Path(ref)
    if not path.exists():
        table = cluster_catalog()
        if ref in table:
            return table[ref]
        if not looks_like_path(ref):
            raise unknown_cluster(ref, table)
    return parse(ClusterSpec, read_data(path), str(path))


def unknown_cluster(ref: str, table: dict[str, ClusterSpec]):
    """The error for a cluster name the catalog lacks; a GPU's name (a common slip) names its clusters."""
    users = sorted(name for name, spec in table.items() if spec.gpu == ref)
    if users:
        return PlannerError(f"'{ref}' is a GPU, not a cluster; clusters of it: {', '.join(users)} "
                            "(planner catalog clusters)")
    return unknown_name("cluster", ref, list(table))


def build_cluster(spec: ClusterSpec, num_gpus: int | None) -> cm.Cluster:
    """Cost-model cluster with `num_gpus` (the --gpus flag), else the spec's own count."""
    count = num_gpus if num_gpus is not None else spec.num_gpus
    if count is None:
        raise PlannerError(f"cluster '{spec.name}' has no num_gpus; pass --gpus N")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= L.MAX_GPUS:
        raise PlannerError(f"the GPU count (--gpus, a cluster's num_gpus, a timed step's gpus) must be a whole number "
                           f"from 1 to {L.MAX_GPUS} (got {count!r})")
    gpu = resolve_gpu(spec.gpu)
    for warning in spec.implausible(gpu):
        print(f"planner: warning: {warning}", file=sys.stderr)
    return spec.to_cluster(gpu, count)


def load_estimate(ref: str, required: tuple[str, ...] = ("plan",)) -> dict:
    """One estimate object (`planner estimate --json`) from a file or '-' (stdin); the output of
    `suggest --json` gives its first plan. Anything else is one clear error."""
    data = reading.parse_text(reading.read_text(ref), ref, as_json=True)
    if isinstance(data, dict) and isinstance(data.get("plans"), list) and data["plans"]:
        data = data["plans"][0]
    if isinstance(data, list):
        raise PlannerError(f"{ref}: holds a list of {len(data)} estimates; pass one (e.g. jq '.[0]')")
    return checked_estimate(data, ref, required)


def checked_estimate(data, ref: str, required: tuple[str, ...] = ("plan",)) -> dict:
    """`data` when it is one estimate object with the `required` keys, every key compare and emit read typed,
    finite and bounded (EstimateRecord); else one PlannerError naming `ref`. For objects from a file
    (load_estimate) and from a Python caller (analysis.compare)."""
    if not isinstance(data, dict) or any(k not in data or data[k] is None for k in required):
        raise PlannerError(f"{ref}: expected one estimate object from `planner estimate --json` "
                           f"(with {', '.join(required)})")
    parse(EstimateRecord, data, ref)
    return data


def model_rows() -> list[dict]:
    """One summary row per catalog model, with its parameter count."""
    from costmodel.flops import total_parameters

    out = []
    for name in model_catalog():
        m = load_model_spec(name)
        model = m.to_model()
        out.append({"name": name, "parameters_b": round(total_parameters(model) / 1e9, 2),
                    "active_b": round(total_parameters(model, active=True) / 1e9, 2),
                    "experts": f"{m.moe.num_experts} x top {m.moe.experts_per_token}" if m.moe else "-",
                    "layers": m.num_layers, "hidden": m.hidden_size, "heads": m.num_attention_heads,
                    "kv_heads": m.num_kv_heads or m.num_attention_heads, "seq_length": m.seq_length, "mlp": m.mlp})
    return out
