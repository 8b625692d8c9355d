"""`planner catalog gpus|clusters|models`: what the shipped catalogs hold, with sources and prices."""
from __future__ import annotations

import argparse
import json

from rich.table import Table

from . import loading, render


def gpu_rows() -> list[dict]:
    return [{"name": g.name, "generation": g.generation, "memory_gib": g.memory_gib,
             "bf16_tflops": g.dense_tflops.get("bf16"), "fp8_tflops": g.dense_tflops.get("fp8"),
             "hbm_gbytes_per_s": g.hbm_bandwidth_gbytes_per_s, "nvlink_gbytes_per_s": g.nvlink_bandwidth_gbytes_per_s,
             "tdp_watts": g.tdp_watts, "power_limit_watts": g.power_limit_watts}
            for g in loading.gpu_catalog().values()]


def cluster_rows() -> list[dict]:
    return [{"name": c.name, "gpu": c.gpu if isinstance(c.gpu, str) else c.gpu.name, "gpus_per_node": c.gpus_per_node,
             "nvlink_domain_size": c.nvlink_domain_size, "network_gbits_per_s": c.network_bandwidth_gbits_per_s,
             "rdma": c.rdma, "usd_per_gpu_hour": c.usd_per_gpu_hour, "price_kind": c.price_kind,
             "price_date": c.price_date} for c in loading.cluster_catalog().values()]


def model_rows() -> list[dict]:
    from costmodel.flops import total_parameters

    out = []
    for name in loading.model_catalog():
        m = loading.load_model_spec(name)
        out.append({"name": name, "parameters_b": round(total_parameters(m.to_model()) / 1e9, 2),
                    "layers": m.num_layers, "hidden": m.hidden_size, "heads": m.num_attention_heads,
                    "kv_heads": m.num_kv_heads or m.num_attention_heads, "seq_length": m.seq_length, "mlp": m.mlp})
    return out


KINDS = {"gpus": gpu_rows, "clusters": cluster_rows, "models": model_rows}


def cmd_catalog(args: argparse.Namespace) -> int:
    rows = KINDS[args.kind]()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title=f"catalogs: {args.kind} ({loading.catalog_dir()})", title_justify="left")
    for key in rows[0]:
        table.add_column(key, justify="left" if key in ("name", "gpu", "generation", "mlp", "price_kind", "price_date") else "right")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row.values()))
    render.make_console().print(table)
    return 0


def register(sub) -> None:
    p = sub.add_parser("catalog", help="list the shipped GPUs, clusters (with dated prices) or models",
                       description="List catalog entries; sources are in the YAML files under catalogs/.")
    p.add_argument("kind", choices=sorted(KINDS))
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_catalog)
