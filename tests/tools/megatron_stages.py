"""Where Megatron-LM puts each transformer layer for planner's pipeline splits (by hand, not in CI: Megatron-LM is
not on PyPI).

    MEGATRON_LM=path/to/Megatron-LM python tests/tools/megatron_stages.py [--write]

For each case the pretrain_gpt.py arguments `planner emit --format megatron` writes (tp 1, dp 1: world = pp) go
through Megatron-LM d98e8a64's parse_args, validate_args and core_transformer_config_from_args; then, for every
pipeline rank r and virtual stage v, Megatron-core's own get_num_layers_to_build and
get_transformer_layer_offset (transformer_block.py, transformer_layer.py) say how many decoder layers that model
chunk builds and from which layer, and, under a --pipeline-model-parallel-layout, whether the chunk holds the
embedding, the multi-token prediction block and the loss. Stored in tests/data/emit/megatron/stage_results.json,
read by tests/test_megatron_stages.py against costmodel/pipeline.py chunk_layers.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import megatron_validate  # a sibling: the stand-ins for Megatron-LM on a CPU machine

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "data" / "emit" / "megatron" / "stage_results.json"
# (id, model: a catalog name or tiny()'s overrides, plan)
CASES = [
    ("tiny13-pp8", {"num_layers": 13}, {"pp": 8}),
    ("tiny24-pp4-split-5-7-6-6", {}, {"pp": 4, "stage_layers": [5, 7, 6, 6]}),
    ("tiny24-pp4-vpp4", {}, {"pp": 4, "vpp": 4}),
    ("tiny24-pp2-vpp2-split-5-7-6-6", {}, {"pp": 2, "vpp": 2, "stage_layers": [5, 7, 6, 6]}),
    ("tiny30-pp4", {"num_layers": 30}, {"pp": 4}),
    ("llama3-70b-pp4-vpp5", "llama3-70b", {"pp": 4, "vpp": 5}),
    ("llama3-405b-pp16-vpp8-meta", "llama3-405b", {"pp": 16, "vpp": 8, "stage_layers": [0] + [1] * 126 + [0]}),
    ("deepseek-v3-pp2-vpp8", "deepseek-v3", {"pp": 2, "vpp": 8, "stage_layers": [4] * 15 + [1]}),
    ("deepseek-v3-pp8-vpp4", "deepseek-v3", {"pp": 8, "vpp": 4, "stage_layers": [1] + [2] * 30 + [0]}),
]


def emitted_args(model, plan: dict) -> list[str]:
    from emit_support import pipeline_case_job

    from planner.emit import megatron

    _, j = pipeline_case_job(model, plan)
    return megatron.flat_args(j) + megatron.data_args(j)


def chunks(argv: list[str]) -> list[dict]:
    from megatron.core import parallel_state
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    from megatron.core.transformer.transformer_layer import get_transformer_layer_offset
    from megatron.training.arguments import core_transformer_config_from_args, parse_args, validate_args

    pp = int(argv[argv.index("--pipeline-model-parallel-size") + 1])
    os.environ.update(WORLD_SIZE=str(pp), RANK="0", LOCAL_RANK="0")
    sys.argv = ["pretrain_gpt.py", *argv]
    if "rope" in sys.argv:  # RoPE fusion needs Transformer Engine, which a CPU machine lacks
        sys.argv.append("--no-rope-fusion")
    args = parse_args()
    validate_args(args, {})
    cfg = core_transformer_config_from_args(args)
    vpp = args.virtual_pipeline_model_parallel_size or 1
    parallel_state.get_pipeline_model_parallel_world_size = lambda *a, **k: pp
    parallel_state.get_virtual_pipeline_model_parallel_world_size = lambda *a, **k: (vpp if vpp > 1 else None)
    layout = cfg.pipeline_model_parallel_layout
    out = []
    for v in range(vpp):
        for r in range(pp):
            parallel_state.get_pipeline_model_parallel_rank = lambda *a, _r=r, **k: _r
            stage = v if vpp > 1 else None
            chunk = {"pp_rank": r, "vp_stage": v, "layers": get_num_layers_to_build(cfg, vp_stage=stage, pp_rank=r),
                     "offset": get_transformer_layer_offset(cfg, vp_stage=stage, pp_rank=r)}
            if layout is not None:
                held = layout.layout[r][v]
                chunk.update({k: held.count(t) for k, t in (("embedding", LayerType.embedding),
                                                              ("mtp", LayerType.mtp), ("loss", LayerType.loss))})
            out.append(chunk)
    return out


def main() -> None:
    write = "--write" in sys.argv[1:]
    sys.path.insert(0, str(ROOT / "tests"))
    megatron_validate.stand_in()
    results = {}
    for cid, model, plan in CASES:
        argv = emitted_args(model, plan)
        results[cid] = {"model": model, "plan": plan, "args": argv, "chunks": chunks(argv)}
        print(cid, [(c["offset"], c["layers"]) for c in results[cid]["chunks"]])
    if write:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
