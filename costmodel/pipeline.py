"""Pipeline parallelism: layer split over stages, bubble, and schedule length.

Source: Narayanan et al. 2021 (arXiv:2104.04473) Sec 2.2: with p stages and m micro-batches
the 1F1B bubble is (p-1)/m of the ideal time, and (p-1)/(v m) with v interleaved model chunks
per GPU. Uneven splits follow Megatron-LM (--decoder-first/last-pipeline-num-layers,
--account-for-embedding-in-pipeline-split): the step is paced by the slowest stage.
"""
from __future__ import annotations

from functools import lru_cache

from .types import Model, Plan


def chunk_layers(model: Model, plan: Plan) -> tuple[int, ...]:
    """Layers per model chunk in pipeline order (chunk j x pp + r on rank r): the plan's split, else the default."""
    return plan.stage_layers or default_chunk_layers(model.num_layers, plan.pp, plan.vpp)


@lru_cache(maxsize=4096)
def default_chunk_layers(num_layers: int, pp: int, vpp: int) -> tuple[int, ...]:
    """Layers per model chunk, in pipeline order, with the largest chunk as small as it can be
    (ceil(layers / chunks)).

    Without interleaving the split has the shape Megatron-LM writes with
    --decoder-first/last-pipeline-num-layers, every middle stage alike: with at least chunks - 2
    layers over, every middle stage takes one and the first and last stages (which also hold the
    embedding and the output layer) share the rest, the first the larger half; with one or two
    over, the first (then the last) takes them; between the two, the middle stages take one each
    still, and the first and last keep what remains (fewer than the others).
    Interleaved chunks take the same shape where no pipeline rank then holds more layers than with
    one extra layer per chunk, middle chunks first, then the first and the last (which they get
    otherwise): Llama 3.1 405B's 126 layers on pp 16 x vpp 4 are 1, 2, ..., 2, 1, DeepSeek-V3's 61
    on pp 2 x vpp 8 3, 4 x 14, 2 (NVIDIA's recipe writes 4 x 15, 1; the same largest rank). So do
    stages when the first and last would be left with less than a layer each.
    """
    chunks = pp * vpp
    base, extra = divmod(num_layers, chunks)
    if extra == 0 or chunks < 3:
        return tuple(base + (1 if i < extra else 0) for i in range(chunks))
    ends = num_layers - (chunks - 2) * (base + 1)
    shaped = ((ends + 1) // 2,) + (base + 1,) * (chunks - 2) + (ends // 2,)  # Megatron's shape
    if vpp == 1:
        if extra >= chunks - 2 or (extra > 2 and ends >= 2):
            return shaped
        if extra <= 2:
            return (base + 1,) + (base,) * (chunks - 2) + (base + extra - 1,)
    counts = [base] * chunks
    for i in (list(range(1, chunks - 1)) + [0, chunks - 1])[:extra]:
        counts[i] += 1
    if vpp > 1 and ends >= 2 and max(stage_layer_counts(shaped, pp, vpp)) <= max(
            stage_layer_counts(tuple(counts), pp, vpp)):  # Megatron's shape too, when no rank holds more
        return shaped
    return tuple(counts)


def stage_layer_counts(chunk_layers: tuple[int, ...], pp: int, vpp: int) -> tuple[int, ...]:
    """Layers held by each pipeline rank: chunk j*pp + r lives on rank r (Megatron interleaving)."""
    assert len(chunk_layers) == pp * vpp
    return tuple(sum(chunk_layers[j * pp + r] for j in range(vpp)) for r in range(pp))


def uneven_chunks(plan: Plan) -> tuple[int, tuple[int, ...]] | None:
    """The first pipeline rank whose model chunks (of a plan's own stage_layers, interleaved) differ by 2x and by 2
    layers or more, with its chunks' layers, or None: pipeline_seconds' bubble, (total - slowest) / v, is Narayanan
    et al.'s for equal chunks, and an event simulation of Megatron-core's interleaved order departs from it both ways
    as chunks part (validation/README.md, "The interleaved bubble with unequal chunks"). The default splits
    (default_chunk_layers, within a layer of equal) are priced the same way whether written or not."""
    if not plan.stage_layers or plan.vpp < 2:
        return None
    for r in range(plan.pp):
        layers = tuple(plan.stage_layers[j * plan.pp + r] for j in range(plan.vpp))
        if max(layers) >= 2 * max(1, min(layers)) and max(layers) - min(layers) >= 2:
            return r, layers
    return None


def stage_layer_indices(chunk_layers: tuple[int, ...], pp: int, vpp: int) -> tuple[tuple[int, ...], ...]:
    """The transformer layers (0-based) each pipeline rank holds: chunk c covers the next
    chunk_layers[c] layers of the stack, and chunk j*pp + r lives on rank r."""
    starts = [sum(chunk_layers[:c]) for c in range(len(chunk_layers))]
    def chunk(c: int) -> range:
        return range(starts[c], starts[c] + chunk_layers[c])

    return tuple(tuple(i for j in range(vpp) for i in chunk(j * pp + r)) for r in range(pp))


@lru_cache(maxsize=4096)
def recomputed_layer_indices(chunk_layers: tuple[int, ...], pp: int, vpp: int,
                             per_chunk: int) -> tuple[tuple[int, ...], ...]:
    """The layers each pipeline rank recomputes under block recompute of `per_chunk` layers: the first
    per_chunk of each of its model chunks (Megatron-core recompute.py checkpointed_forward, method "block":
    a TransformerBlock, one per chunk, checkpoints its layers below recompute_num_layers; the FP8/FP4 window
    shift for an input that needs no gradient, which only a first stage without an embedding gradient has,
    is not modelled)."""
    starts = [sum(chunk_layers[:c]) for c in range(len(chunk_layers))]
    def first(c: int) -> range:
        return range(starts[c], starts[c] + min(per_chunk, chunk_layers[c]))

    return tuple(tuple(i for j in range(vpp) for i in first(j * pp + r)) for r in range(pp))


def fill_drain_hops(pp: int, vpp: int) -> int:
    """Stage-to-stage exchanges (a forward send and a gradient send each) that one flush of the interleaved
    1F1B schedule waits for even where its steady state hides them behind the next chunk's compute: v p - 1.
    The warm-up runs forwards only, each group of p micro-batches through chunk after chunk (Narayanan et al.
    2021, arXiv:2104.04473, Sec 2.2.2 and Fig. 4; Megatron-core schedules.py
    forward_backward_pipelining_with_interleaving: (p - rank - 1) x 2 + (v - 1) x p warm-up forwards), so a
    rank moving to its next chunk waits for its micro-batch to come round the ring of p ranks, one hop each,
    with no backward to do meanwhile: (v - 1) p hops, after the p - 1 that bring the first micro-batch to the
    last rank; the cool-down sends the gradients back the same way. The count does not depend on the number
    of micro-batches (at least p); tests/test_pipeline_fill_hops.py checks it against an event simulation of
    that order. Without interleaving (v = 1) it is the p - 1 of the fill, which the 1F1B stages, blocking on
    each exchange, already count (stage.exposed_p2p_seconds)."""
    return pp * vpp - 1 if pp > 1 else 0


def bubble_overhead_ratio(pp: int, vpp: int, num_microbatches: int) -> float:
    """Bubble time over ideal compute time for equal stages: (p-1)/(v m) (Narayanan eq. 1 and Sec
    2.2.2) with at least p micro-batches; `pipeline_seconds` below it."""
    busy, bubble = pipeline_seconds((1.0,) * pp, num_microbatches, vpp)
    return bubble / busy


def bubble_fraction(pp: int, vpp: int, num_microbatches: int) -> float:
    """Share of the pipeline's wall time that is bubble for equal stages, in [0, 1): (p-1) / (v m + p - 1)
    with at least p micro-batches."""
    busy, bubble = pipeline_seconds((1.0,) * pp, num_microbatches, vpp)
    return bubble / (busy + bubble)


def pipeline_seconds(stage_seconds: tuple[float, ...], num_microbatches: int, vpp: int) -> tuple[float, float]:
    """(busy, bubble) seconds of one pipeline flush.

    Each micro-batch passes the slowest stage once (m * T_max); fill and drain add the other
    stages' time once, shortened v times by interleaving. Equal stages give (p-1) T / v, i.e.
    the bubble ratio (p-1)/(v m) above. Interleaving shortens the bubble this way when there are
    at least p micro-batches to rotate through the chunks (Narayanan et al. Sec 2.2.2 takes m a
    multiple of p). With fewer, the first micro-batch still crosses all p x v chunks in sequence
    (p T for equal stages) and each later one ends a chunk, T / v, after it: p T + (m - 1) T / v,
    which meets the formula above at m = p and the 1F1B flush at m = 1 (it was the 1F1B flush for
    every m < p, so 3 micro-batches on 4 interleaved stages took longer than 4; a search audit).
    """
    slowest, total, m = max(stage_seconds), sum(stage_seconds), num_microbatches
    busy = m * slowest
    bubble = (total - slowest) / vpp
    if m < len(stage_seconds):
        # Fewer micro-batches than stages (torch.distributed.pipelining allows it): the first one
        # crosses every chunk in sequence (the sum of the stages' times) and each later one follows a
        # chunk behind, T_max / v, never sooner than the slowest stage's own work.
        bubble = max(bubble, total + (m - 1) * slowest / vpp - busy)
    return busy, bubble
