"""Each transformer layer where Megatron-LM itself puts it for planner's pipeline splits
(tests/tools/megatron_stages.py, run by hand with Megatron-LM d98e8a64: for every pipeline rank r and virtual
stage v, get_num_layers_to_build and get_transformer_layer_offset on the config the emitted arguments give)
against costmodel/pipeline.py chunk_layers, whose chunk v x pp + r is on rank r (costmodel/pipeline.py
stage_layer_indices). If the argument test fails after an emitter change, rerun the tool with --write."""
from __future__ import annotations

import json

import pytest
from emit_support import DATA, pipeline_case_job

from costmodel.pipeline import chunk_layers
from planner.emit import megatron

STAGES = json.loads((DATA / "megatron" / "stage_results.json").read_text())


def case_job(case: dict):
    return pipeline_case_job(case["model"], case["plan"])


@pytest.mark.parametrize("cid", sorted(STAGES))
def test_the_stored_split_is_of_todays_arguments(cid):
    _, j = case_job(STAGES[cid])
    assert megatron.flat_args(j) + megatron.data_args(j) == STAGES[cid]["args"]


@pytest.mark.parametrize("cid", sorted(STAGES))
def test_megatron_builds_each_chunk_as_planner_splits_it(cid):
    """Chunk by chunk in the order Megatron-LM runs them (v x pp + r): the same first layer and layer count; under
    a layout the embedding on the first chunk, the loss and any multi-token prediction block on the last."""
    model, j = case_job(STAGES[cid])
    planned = chunk_layers(j.cm_model, j.plan)
    built = STAGES[cid]["chunks"]
    assert [(c["offset"], c["layers"]) for c in built] == [(sum(planned[:i]), n) for i, n in enumerate(planned)]
    if "embedding" in built[0]:
        last = len(built) - 1
        assert [c["embedding"] for c in built] == [int(i == 0) for i in range(len(built))]
        assert [c["loss"] for c in built] == [int(i == last) for i in range(len(built))]
        assert [c["mtp"] for c in built] == [model.mtp_layers * (i == last) for i in range(len(built))]
