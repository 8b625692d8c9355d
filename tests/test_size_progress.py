"""`planner size` reports each plan search to its progress display, and shows none when not on a terminal."""
from __future__ import annotations

import pytest

from planner.commands.main import main
from planner.sizing.run import SizeRequest, size


@pytest.mark.parametrize("workers", [1, 2])
def test_every_search_is_reported(workers):
    seen = []
    request = SizeRequest("llama3-8b", tokens=1e11, gbs=256, deadline_days=30, gpu_types="h100-sxm-80gb,a100-sxm-80gb",
                          max_gpus=256, workers=workers)
    r = size(request, progress=lambda gpu, count: seen.append((gpu, count)))
    assert len(seen) == r["searched"] > 0
    assert {gpu for gpu, _ in seen} <= {"h100-sxm-80gb", "a100-sxm-80gb"}
    assert all(count % 8 == 0 for _, count in seen)  # whole DGX nodes


def test_no_progress_when_piped(capsys):
    assert main(["size", "llama3-8b", "--tokens", "1e11", "--gbs", "256", "--gpu-types", "h100-sxm-80gb",
                 "--max-gpus", "64"]) == 0
    assert "sizing:" not in capsys.readouterr().err
