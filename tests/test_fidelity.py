"""Ratchet: the cost model's error on the published runs (validation/runs.yaml) may not get worse.

Bounds are the figures reached when this test was last tightened (see README "Accuracy"), plus
a hair for float noise. Lower them when the model improves; never raise one quietly: each re-base
below names the bounds it raised and why.

The in-sample bounds score the shipped constants on the rows they were fitted on. The
out-of-sample bounds (`planner validate --leave-one-source-out`) score each source group with
constants fitted on the other groups only, so a mechanism or constant tuned on one source's rows
cannot hide there; every row must be scored, none left out.
"""
import pytest

from planner.validation import runs as validation

# Re-based 2026-11-30 three times: after the audit's corrections to the rows themselves (each now runs
# the mechanisms its cited code runs); after 100 Megatron-Bridge MoE rows joined (group mbridge-moe) and
# the fit's objective became the mean of the groups' MAPEs (each source weighs the same); and when 46
# Megatron-Bridge dense rows (mbridge-dense, 44 scored), torchtitan's two Llama 3.1 405B long-context
# rows (in the torchtitan group: same publisher and framework, so two rows do not weigh a ninth of the
# objective) and 28 full-shard FSDP rows without TP or PP (fsdp-2023-2024: MosaicML llm-foundry MPT and
# IBM fms-fsdp Llama 2 on A100 and H100) joined and the constants were refit on all 234 rows
# (`planner validate --fit-on all`, from priors that now include MoE host sync 0).
# Re-based a fourth time, and raised for four groups, when the attention kernel became a plan field
# (Plan.attention_kernel: cuDNN's fused attention, or FlashAttention-2 at its measured 0.522 of cuDNN's
# rate on Hopper; the one attention fraction shared by A100 and H100 became one per generation) and the
# constants were refit. Overall 9.27% -> 7.93% in sample, 12.7% -> 11.4% leaving a source out, 10.3% ->
# 9.2% leaving a generation out; hopper rows 9.5% -> 5.7%; torchtitan's 405B rows -11.7%/-15.8% ->
# -2.9%/-4.2%. Worse in sample: bloom 7.07% -> 7.15% (2 A100 rows), korthikanti-2022 5.65% -> 6.07%
# (max 14.7% -> 10.3%), mlperf 0.28% -> 0.87%, torchtitan 5.25% -> 5.46% (max 15.8% -> 13.9%): the
# refit's shared constants (GEMM half-dimension 289 -> 383, HBM 0.512 -> 0.637, layer overhead 128 ->
# 428 us) moved for the other rows; held out, mlperf 0.8% -> 1.8%.
# Then (same day) Megatron-core's all-to-all dispatcher was found to wait on the host for its split sizes
# even with the router and preprocessing in CUDA graphs (stage.host_synced_dispatch): the two 25.11/26.02
# Qwen3-30B-A3B B200 rows went from -62%/-61% to -33%/-30% (MoE max 62.2% -> 44.6%, overall 7.93% ->
# 7.71%, out of sample 11.40% -> 11.37%, by generation 9.23% -> 8.90%); the refit moved the layer overhead
# 428 -> 391 us and the attention fractions by 1-3%, which raised three in-sample bounds: nemo 5.10% ->
# 5.11% (max 13.7% -> 13.9%), fsdp-2023-2024 7.02% -> 7.12% (max 18.4% -> 18.6%), torchtitan max 13.9% ->
# 14.5%.
# Then (2026-12-02) a GPU with its own attention benchmark runs attention at its measured rate relative to the
# part its generation's fitted fraction stands for (compute.attention_rate_scale: cuDNN's SDPA benchmark, GB300
# 1.18x GB200 forward, 1.08x backward at 8k); the refit moved the Blackwell fraction 0.3214 -> 0.3102 and the
# MoE host wait 2.747 -> 2.682 ms: overall 7.70% -> 7.40%, mbridge-dense 8.08% -> 7.28% (max 24.7% -> 21.8%),
# mbridge-moe 9.46% -> 9.10% (max 44.65% -> 44.55%); the other groups have no Blackwell row and did not move.
# Then (2026-12-02, later) FP8 attention runs at its measured speedup over bf16 (cudnn-frontend's SDPA benchmark:
# 1.20x forward, 1.04x backward on GB200), not at the FP8 peak (2x), and a whole-iteration CUDA graph
# (Plan.full_iteration_graph, 26 Megatron-Bridge rows) has no per-layer host overhead; the fit gained a fourth
# start (half length 3072), and the refit moved the Blackwell fraction 0.3102 -> 0.3319, the half length 2916 ->
# 3068, the layer overhead 391 -> 369 us, the MoE host wait 2.682 -> 2.819 ms, Hopper's cuDNN fraction 0.4293 ->
# 0.4298, Ampere's 0.3824 -> 0.3873. Overall 7.40% -> 7.17%, leaving a source out 10.75% -> 10.15%, a generation
# 8.7% -> 8.17%, held out 11.23% -> 11.15%. Four per-group bounds were RAISED, each by the shared constants'
# move (the Blackwell rows moved the half length and the layer overhead that the Hopper rows share): torchtitan
# in sample 5.34% -> 5.53% (max 14.47% -> 14.72%, the 8B 32k float8 row), and out of sample fsdp-2023-2024 7.8% ->
# 8.3%, torchtitan 12.2% -> 13.2%, hopper (generation) 8.9% -> 9.2%. Every other bound was lowered to its reached
# value.
# 2026-12-04, the backward's TP collectives beside the GEMMs (Plan.tp_async_grad; validation/README.md, "The
# backward's TP collectives beside the GEMMs"), refit: in sample 7.17% -> 7.08%, a generation left out 8.17% ->
# 7.97%, a source left out 10.15% -> 10.16%, held out 11.15% -> 11.69%; Korthikanti's Table 4 per-layer times
# +9-18% -> +5-10% (tests/test_tp_async_grad.py). Lowered to their reached values: in sample, korthikanti-2022,
# nemo and torchtitan in and out of sample, the generation split overall, ampere and hopper. RAISED, each where
# the rows it bounds do not run the mechanism or were fast already: fsdp-2023-2024 in sample 6.85% -> 6.97%
# (max 18.27% -> 18.44%; no row has TP: the refit's Hopper attention fraction 0.4298 -> 0.4353) and left out
# 8.3% -> 9.2% (inside the 7.75-9.25% that benchmarks/fit_noise.py measured for that fold), mbridge-dense in
# sample 6.89% -> 6.97% and left out 7.1% -> 7.2% (GB200 NVFP4 at tp 2, predicted fast, faster), nemo's max
# 13.73% -> 13.86% (Nemotron 22B, the refit), mlperf left out 0.9% -> 1.4%, mbridge-moe left out 14.3% ->
# 14.34%, blackwell left out 8.78% -> 8.84%; held out below.
# 2026-12-04, later: GB300's large-GEMM rate derived from GB200's measured one by the two parts' ratio in one
# cuBLASLt FP8 benchmark, 1.173x (catalogs/gpus.yaml gb300; it had the Blackwell generation's mean fraction,
# 1.03x GB200's in FP8), refit (validation/README.md, "GB300's GEMM rate"): in sample 7.08% -> 6.51%, a source
# left out 10.16% -> 9.18%, a generation 7.97% -> 7.50%, an MoE model 9.1% -> 8.35%, Hopper -> Blackwell 8.92% ->
# 8.39%, Blackwell -> Hopper 9.15% -> 8.80%, held out 11.69% -> 11.34%. Every bound the change lowered is
# lowered to its reached value. RAISED, each on rows with no GB300 GEMM in them, through the constants they
# share with the GB300 rows (the refit's Blackwell attention fraction 0.3319 -> 0.3177, half length 3068 ->
# 3409, Ampere's 0.3873 -> 0.4120, HBM efficiency 0.637 -> 0.662): in sample bloom 7.16% -> 7.24% (max 8.2%),
# megatron-2021's max 13.05% -> 13.27%, torchtitan 5.35% -> 5.53% (max 13.68% -> 14.54%, the 8B 32k float8
# row), mbridge-moe's max 44.55% -> 45.00% (B300 Qwen3-235B at micro-batch 1); left out bloom 7.2% -> 7.24%,
# nemo 4.7% -> 4.99%; held out the attention-bound long-context MoE rows (below).
# 2026-12-04, late: what a collective beside compute costs it (Efficiency.collective_sm_share) went from a prior of
# 0.12 to 0.19, measured on a lent H200 (benchmarks/overlap_contention.py; validation/README.md, "What a collective
# beside compute costs it"; not fitted), and the constants were refit: in sample 6.51% -> 6.41% (max 45.0% ->
# 44.1%), a source left out 9.18% -> 8.94%, a generation 7.50% -> 7.41%, an MoE model 8.35% -> 8.35%, Hopper ->
# Blackwell 8.39% -> 8.24%, Blackwell -> Hopper 8.80% -> 8.55%, held out 11.34% -> 11.25%; the FSDP rows 6.37% ->
# 5.74% in sample, 7.9% -> 5.9% left out. Every bound the change lowered is lowered to its reached value. RAISED,
# on rows that were predicted slow already and overlap their collectives, which now cost the compute beside them
# more, or through the refit's shared constants (layer overhead 364 -> 391 us, Hopper attention 0.4326 -> 0.4408,
# Ampere 0.4120 -> 0.4005, Blackwell 0.3177 -> 0.3121): in sample korthikanti-2022 3.13% -> 3.45% (max 6.67% ->
# 6.86%; +3.3% signed, A100 TP x PP) and nemo 4.47% -> 4.54% (max 13.67% -> 14.03%); left out korthikanti-2022
# 4.56% -> 4.66%, megatron-2021 4.4% -> 4.52%, mlperf 1.39% -> 1.71% (3 rows), nemo 4.99% -> 5.15%, mbridge-moe
# 13.34% -> 13.58%; a generation left out, blackwell 8.04% -> 8.26%; an MoE model left out, DeepSeek-V3 7.1% ->
# 7.33% and Qwen3-30B-A3B 7.7% -> 7.91%; held out, the two separately bounded maxima below.
# 2026-12-04, latest: the expert-parallel dispatch and combine that the 1F1B A2A overlap launches into the other
# micro-batch's compute wait for SMs, each the time left of the compute kernel then running (layer.kernel_residual_
# seconds; measured on the H200: tests/test_overlap_measured.py), and the constants were refit: in sample 6.41% ->
# 6.26%, the MoE rows 8.25% -> 7.94%, a source left out 8.94% -> 8.70%, a generation 7.41% -> 7.25%, an MoE model
# 8.35% -> 7.98%, Hopper -> Blackwell 8.24% -> 8.00%, Blackwell -> Hopper 8.55% -> 8.37%, held out 11.25% -> 10.83%.
# RAISED, on rows with no MoE layer, through the refit's shared constants (layer overhead 391 -> 329 us, Hopper
# attention 0.4408 -> 0.4337, Ampere 0.4005 -> 0.4071, half length 3118 -> 3219): in sample megatron-2021 4.38% ->
# 4.42%, torchtitan 5.17% -> 5.45% (max 12.50% -> 14.04%), mbridge-dense 5.59% -> 5.71% (max 12.47% -> 12.70%);
# left out korthikanti-2022 4.66% -> 4.77%, mbridge-dense 5.79% -> 5.84%; and the MoE max 44.08% -> 44.47% (the B300
# Qwen3-235B row at micro-batch 1, host-bound: its exchanges still hide whole, and the refit's smaller layer overhead
# makes it faster); held out, two separately bounded sets below.
# 2026-12-04 (thirty-second session): Transformer Engine's casts as its code moves them (one layout of per-tensor FP8
# on Blackwell; the quantization a LayerNormLinear's norm does; torchao's per-use weight casts read in full:
# tests/test_te_casts.py, validation/README.md "Transformer Engine's casts as its code moves them"), refit: in sample
# 6.26% -> 6.18%, a source left out 8.70% -> 8.64%, a generation 7.25% -> 7.04%, held out 14.45% -> 14.36% (the 31
# rows 10.83% -> 10.66%), Blackwell -> Hopper 8.37% -> 8.08%. RAISED, each moved by the refit's shared constants (HBM
# 0.662 -> 0.687, layer overhead 329 -> 362 us, Ampere attention 0.4071 -> 0.4186, half length 3219 -> 3422) or by
# the casts themselves: in sample bloom 7.24% -> 7.31% (2 A100 rows, no casts), megatron-2021's max 13.27% -> 13.48%
# (its 530B ZeRO-3 row, fast already), mlperf 0.09% -> 0.16% (3 rows, delayed scaling: their QKV and FC1 inputs
# cast from the norm, +1 B per element for +4), nemo 4.43% -> 4.51% (max 13.91% -> 14.08%, Nemotron 22B, fast
# already, the same casts) and torchtitan 5.45% -> 5.62% (max 14.04% -> 14.54%, the 8B 32k float8 row, slow already:
# its per-use weight casts now read the weights in full); left out bloom 7.24% -> 7.32%, torchtitan 6.03% -> 6.33%,
# fsdp-2023-2024 5.81% -> 6.05%; an MoE model left out 7.98% -> 8.03% (Qwen3-30B-A3B 7.93% -> 8.13%, Qwen3-235B-A22B
# 9.09% -> 9.10%); Hopper -> Blackwell 8.00% -> 8.30% (a Hopper fit, whose delayed and current-scaling rows now cast
# less, predicts Blackwell faster); held out, the 31 rows' max 28.72% -> 29.43% (MPT-30B at 8k on 8 H100, fast
# already) and the separately bounded sets below. Every other bound is lowered to its reached value.
# 2026-12-04 (thirty-third session): B300's attention rate derived from GB300's measured one (catalogs/gpus.yaml
# derived_attention_bf16_tflops: B300 over GB300 in one cuDNN SDPA benchmark that ran both; before, B300 kept the
# generation's fitted fraction), refit (layer overhead 362 -> 339 us, Hopper cuDNN attention 0.4331 -> 0.4381, Ampere
# 0.4186 -> 0.4285, Blackwell 0.3127 -> 0.3152, half length 3422 -> 3561): in sample 6.18% -> 6.11% (the 14 B300 rows
# 13.3% -> 12.1%; the other 220 rows' MAPE stays 5.73%, though the refit moves many of them), a generation left out
# 7.04% -> 6.99%, an MoE model 8.03% -> 7.85%, Blackwell -> Hopper 8.08% -> 8.01%. RAISED: mbridge-moe's max 44.1% ->
# 45.7% (B300 Qwen3-235B at micro-batch 1 with the all-to-all dispatcher, host-bound and fast already, now with faster
# attention), mlperf's max 0.16% -> 0.25% and mbridge-dense's 12.14% -> 12.20% (the refit's shared constants); a source
# left out 8.64% -> 8.76%, most of it the fsdp-2023-2024 fold (6.04% -> 7.05%), whose fit lands in another basin (layer
# overhead 500 us, half length 2360, Blackwell attention 0.283; the same fold's optimiser spread is 1.5 points,
# validation/README.md "How much of a left-out figure is the optimiser"), with korthikanti-2022 4.45% -> 4.54%, mlperf
# 1.57% -> 1.61%, torchtitan 6.33% -> 6.52%, mbridge-dense 5.53% -> 5.64%; DeepSeek-V3 left out 6.85% -> 7.47% (its B300
# rows, MLA attention at the derived rate, now predicted fast); held out, the 31 rows 10.66% -> 10.77% and
# megatron-core-2024 13.34% -> 13.42% (H100 rows through the refit's Hopper attention and layer overhead).
# 2026-12-05 (thirty-fourth session): the dense projections as each stack's model code writes them (Plan.projections:
# torchtitan's 2024-2025 Llama rows time Q, K, V, gate and up as five GEMMs; tests/test_projections.py), refit (layer
# overhead 339 -> 355 us, Hopper cuDNN attention 0.4381 -> 0.4447, Ampere 0.4285 -> 0.4219, Blackwell 0.3152 ->
# 0.3140, half length 3561 -> 3485; objective 0.04819 -> 0.04816): in sample 6.111% -> 6.106% (torchtitan 5.72% ->
# 5.27%), a source left out 8.76% -> 8.63% (fsdp-2023-2024 7.05% -> 5.74%: the fold's fit left the other basin), an
# MoE model 7.85% -> 7.83%; held out, torchtitan's 2025 TP 8 rows 16.4% -> 14.7% and the 2024 ones 9.8% -> 9.4%.
# RAISED, each through the refit's shared constants: in sample korthikanti-2022 2.99% -> 3.01%, mlperf 0.09% -> 0.13%
# (max 0.25% -> 0.38%), nemo 4.53% -> 4.71% (max 14.07% -> 14.34%, Nemotron 22B, fast already, faster with the
# Hopper attention) and fsdp-2023-2024 5.03% -> 5.28% (max 13.07% -> 13.47%: MPT-13B on 64 H100, fast already, and
# the A100 rows through the lower Ampere attention and the longer layer overhead); left out nemo 4.87% -> 5.28% and
# torchtitan 6.52% -> 7.00% (the fold's fit, without the rows that raise the Hopper attention fraction, predicts the
# 8B TP 1 float8 rows, slow already, slower with their separate projections); a generation left out, Blackwell 7.76%
# -> 7.84%; held out, the 31 rows 10.77% -> 11.06% (max 28.6% -> 28.8%; NeMo's long sequences and MPT's, fast
# already, faster with the Hopper attention) and mcore-moe's max 82.4% -> 82.8% (GB200 at 131k tokens).
# With the descent's restart (forty-fourth session: planner/validation/fit.py RESTARTS, a second descent from the
# best start, objective 0.04816 -> 0.04788; HBM 0.686 -> 0.694, GEMM half dimension 383 -> 368, layer overhead
# 355 -> 376 us, attention Hopper 0.4447 -> 0.4463, Ampere 0.4219 -> 0.4345, Blackwell 0.3140 -> 0.3189, half length
# 3485 -> 3696): 6.088%; RAISED by the refit's shared constants, megatron-2021 4.75% (max 13.66%), torchtitan 5.39%
# (max 12.92%), mbridge-dense 5.47% and mbridge-moe's max 45.65% (the B300 row).
# With the loss as each stack runs it (forty-fourth session: Plan.cross_entropy, compute.LOSS_BYTES_PER_LOGIT; refit,
# objective 0.04788 -> 0.04752, HBM 0.694 -> 0.705, GEMM half dimension 368 -> 389, layer overhead 376 -> 311 us,
# attention Hopper 0.4463 -> 0.4672, Ampere 0.4345 -> 0.4548, Blackwell 0.3189 -> 0.3207, half length 3696 -> 3949):
# 6.054% (nemo 4.57% -> 4.32%, Nemotron 22B -14.3% -> -10.9%); korthikanti-2022 (3.03%, max 6.73%, whose rows run
# the unfused loss and were slow already), mbridge-dense's max (12.39%, a GB300 8B row) and mbridge-moe (7.76%)
# RAISED.
# With the pipeline's fill and drain hops, per-layer CUDA graphs on the six rows that ran them and the fit's fifth
# start (fifty-fourth session: pipeline.fill_drain_hops, Plan.layer_cuda_graphs, fit.HALF_SEQ_STARTS; refit,
# objective 0.04752 -> 0.04721, HBM 0.705 -> 0.702, GEMM half dimension 389 -> 383, layer overhead 311 -> 399 us,
# attention Hopper 0.4672 -> 0.4858, Ampere 0.4548 -> 0.4663, Blackwell 0.3207 -> 0.3306, half length 3949 -> 4096,
# the bound's top): 6.054% -> 5.983% (torchtitan 5.37% -> 5.10%, max 10.8% -> 8.2%; mbridge-dense 5.31% -> 5.14%);
# RAISED: mlperf 0.02% -> 0.28% (max 0.84%, the 512-GPU row, not graphed, now charged the longer layer overhead),
# nemo's max 11.9% -> 12.8% (Llama 2 7B at 16k tokens, fast already, faster with the refit's attention; NeMo's
# GPT-3 175B and Nemotron-4 340B rows, slow already, +0.5% -> +1.9% and +1.8% -> +4.6% with their flushes' hops),
# korthikanti-2022 3.03% -> 3.05%, fsdp-2023-2024 5.06% -> 5.12% and megatron-2021's max 13.55% -> 13.59% (the refit's
# shared constants).
STEP_MAPE_BOUND = 0.0599  # reached 0.05983 over 234 rows (0.06054 before the hops and graphs, 0.0609 before the loss)
GROUP_STEP_BOUNDS = {        # (MAPE, max) per source group, reached + a hair
    "bloom": (0.074, 0.080), "korthikanti-2022": (0.0306, 0.0673), "megatron-2021": (0.0455, 0.1359),
    "mlperf": (0.0029, 0.0084), "nemo": (0.0424, 0.1283),
    # 9 Llama 3.1 8B rows of torchtitan's benchmarks and the two 405B long-context rows (32k cp 1: -1.7%;
    # 64k cp 2: -3.1%): reached 5.64%, max 13.91% (the 8B 32k float8 row); 5.27%, max 12.90% with the projections
    # (5.10%, max 8.21% with the fill and drain hops)
    "torchtitan": (0.0511, 0.0822),
    # MoE: 7.75% over 100 rows; the worst are B200/B300 rows at micro-batch 1 with the all-to-all
    # dispatcher, 2.2-2.9x slower than later releases' micro-batch 2-4 DeepEP layouts (README, Accuracy)
    "mbridge-moe": (0.0769, 0.4551),
    # dense Llama 3: reached 5.45% over 44 rows, max 12.14% (6.97% and 16.57% before GB300's GEMM rate)
    "mbridge-dense": (0.0514, 0.1211),
    # full-shard FSDP, no TP/PP: reached 5.28% over 28 rows, max 13.47%; the H100 rows predicted fast
    # (validation/README.md, "FSDP rows")
    "fsdp-2023-2024": (0.0512, 0.1324),
}
# Memory over the 11 torchtitan rows with a published peak: 2.18% / 7.38% over the 9 before the 405B rows.
# Those were 12.1% / 12.8% low while their weights were counted at 2 B; since torchao's float8 all-gather
# is counted at the 1 B it keeps, and the pipeline's per-micro-batch receive buffers and kept logits
# (Plan.pipeline_buffers), the repeated K/V (Plan.repeat_kv) and the all-gathered K/V are counted, they
# are 17.1% / 16.4% low (validation/README.md: what is still missing is not identified): reached 4.81%,
# max 17.12%. With the gradient shards FSDP2 writes beside the unsharded accumulation under a pipeline
# (Plan.grad_sync "chunk_end", kept in its reduce-scatter stream's cache), 13.0% / 12.3% low: 4.07%, max 13.02%;
# with the embedding and output weights at 16 bits under low precision (no fp8 copy of them), 12.7% / 12.0%:
# 4.01%, max 12.68%; with DTensor's sequence parallel keeping the QKV and MLP inputs gathered in the
# re-materialised layer (Plan.sp_gathered), 10.2% / 9.5%: 3.56%, max 10.22%; with DTensor loss parallel's
# backward holding four fp32 logit shards, not three (memory.last_stage_extra_bytes: the last stage becomes
# the fullest), 7.9% / 7.2%: 3.14%, max 7.89%.
MEMORY_MAPE_BOUND = 0.032    # overall, reached 0.0315 over 11 rows with a published peak (0.0314 before the
                             # slack became a fraction of the bytes a step allocates, 2026-12-01)
MEMORY_MAX_BOUND = 0.074     # overall, reached 0.0731 (torchtitan 405B 32k row; 0.0787 before the slack
                             # became a fraction of the bytes a step allocates, 2026-12-01)
GROUP_MEMORY_BOUNDS = {"torchtitan": (0.032, 0.074)}

# Out of sample: each source predicted by constants fitted on the other sources (the measured
# figures, printed to 0.1% by benchmarks/accuracy_tables.py, plus 0.1%). Reached when set: 9.97% over 160
# rows; 12.7% over 234 with the dense, 405B and FSDP rows; 11.4% with the attention kernels (torchtitan
# 16.2% -> 12.8%; mlperf 0.9% -> 1.8%). mbridge-moe left out is 16.6%: without MoE rows the
# host-synchronisation constant stays at its prior 0. With GB300's measured attention rate (2026-12-02): 10.75%
# (mbridge-moe 15.6%, mbridge-dense 7.7%, torchtitan 12.2%, fsdp-2023-2024 7.8%, korthikanti-2022 7.2%).
# With FP8 attention at its measured speedup, the whole-iteration graph and the fit's fourth start (2026-12-02):
# 10.15% (mbridge-moe 14.3%, mbridge-dense 7.1%, torchtitan 13.2% and fsdp-2023-2024 8.3%, both raised, above).
# With tp_async_grad (2026-12-04, above): 10.16% (korthikanti-2022 4.7%, nemo 4.7%, torchtitan 12.6% lowered;
# fsdp-2023-2024 9.2%, mlperf 1.4%, mbridge-dense 7.2%, mbridge-moe 14.34% raised).
# With GB300's GEMM rate (2026-12-04, above): 9.18% (fsdp-2023-2024 7.9%, korthikanti-2022 4.56%, mbridge-dense
# 5.83%, mbridge-moe 13.34%, mlperf 1.39%, torchtitan 9.47% lowered; bloom 7.24% and nemo 4.99% raised).
# With the measured collective share (2026-12-04, late, above): 8.94% (fsdp-2023-2024 5.89%, torchtitan 6.78%,
# mbridge-dense 5.79% lowered; korthikanti-2022 4.66%, megatron-2021 4.52%, mlperf 1.71%, nemo 5.15%, mbridge-moe
# 13.58% raised).
# With the expert-parallel exchanges waiting for SMs (2026-12-04, latest, above): 8.70% (torchtitan 6.03%,
# mbridge-moe 13.10% lowered; korthikanti-2022 4.77% and mbridge-dense 5.84% raised).
# With Transformer Engine's casts as its code moves them (thirty-second session, above): 8.64% (korthikanti-2022
# 4.45%, megatron-2021 4.42%, mlperf 1.57%, nemo 4.99%, mbridge-moe 13.07%, mbridge-dense 5.53% lowered; bloom 7.31%,
# torchtitan 6.33% and fsdp-2023-2024 6.04% raised).
# With B300's attention derived from GB300's (thirty-third session, above): 8.76%, RAISED (fsdp-2023-2024 7.05%,
# another basin; korthikanti-2022 4.54%, mlperf 1.61%, torchtitan 6.52%, mbridge-dense 5.64% raised; nemo 4.87%,
# mbridge-moe 13.02% lowered).
# With the projections as the model code writes them (thirty-fourth session, above): 8.63% (fsdp-2023-2024 5.74%,
# korthikanti-2022 4.01%, mlperf 1.55% lowered; nemo 5.28% and torchtitan 7.00% RAISED, above).
# RAISED with the parameters Megatron-core holds whole on every TP rank (forty-first session: the norms, the router,
# MLA's down projections; tests/test_megatron_shards.py): 8.6322%, 0.002 points over the bound (a larger gradient
# sync on the tensor-parallel rows; in sample 6.1063% -> 6.1063%), fsdp-2023-2024 5.756% and torchtitan 7.052% RAISED
# by 0.02 and 0.04 points: those groups have no tensor parallelism to move, so it is where the other groups' fits
# land, within the fit's noise (README, "Out of sample": 1.4 and 3.5 points for these two folds).
# With the descent's restart (forty-fourth session, above): 8.605% (korthikanti-2022 3.81%, mlperf 0.90%, nemo 5.01%,
# mbridge-moe 12.89%, mbridge-dense 5.53% lowered; bloom 7.38%, fsdp-2023-2024 6.07%, megatron-2021 4.85% and
# torchtitan 7.06% RAISED: each fold restarted lands where its own constants do, as in sample).
# RAISED with the loss as each stack runs it (forty-fourth session, above): 8.605% -> 8.720%, most of it the
# megatron-2021 fold, 4.85% -> 5.83%, whose fit moved to another basin (GEMM half dimension 361 -> 280, layer overhead
# 380 -> 590 us, Ampere attention 0.445 -> 0.348) though its rows' loss moves little (vocab 51,200 over tp 8);
# fsdp-2023-2024 6.45%, mbridge-moe 13.07% and mlperf 1.51% RAISED; korthikanti-2022 3.52%, mbridge-dense 5.38%,
# nemo 4.83% and torchtitan 5.84% lowered.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session, above):
# 8.720% -> 8.628% (megatron-2021 5.23%, mlperf 1.41%, nemo 4.74%, mbridge-moe 12.88%, fsdp-2023-2024 6.35% lowered;
# korthikanti-2022 3.52% -> 4.79%, torchtitan 5.84% -> 6.08% and mbridge-dense 5.38% -> 5.41% RAISED: the nine
# Korthikanti rows, slow already, all predicted slow, +4.8% on average, by the fold's fit, whose layer overhead is
# 604 us where all rows give 399).
LOO_STEP_MAPE_BOUND = 0.0863
LOO_GROUP_STEP_MAPE_BOUNDS = {
    "bloom": 0.0738, "korthikanti-2022": 0.0479, "megatron-2021": 0.0523, "mlperf": 0.0142, "nemo": 0.0474,
    "torchtitan": 0.0608, "mbridge-moe": 0.1289, "mbridge-dense": 0.0541, "fsdp-2023-2024": 0.0636,
}
# Leave one GPU generation out (fit on the other generations): reached 10.05% over 160 rows; 10.3% over
# 234; 9.2% with the attention kernels; 8.9% with the all-to-all host wait (ampere 5.3%, hopper 9.1%,
# blackwell 10.1%); 8.7% with GB300's measured attention rate (ampere 5.3%, hopper 8.9%, blackwell 9.8%).
# With FP8 attention, the whole-iteration graph and the fourth start: 8.17% (ampere 5.05%, hopper 9.16%, raised
# above, blackwell 8.78%).
# With tp_async_grad (2026-12-04): 7.97% (ampere 4.59%, hopper 8.64%, blackwell 8.84%, raised).
# With GB300's GEMM rate (2026-12-04, later): 7.50% (ampere 4.56%, hopper 8.51%, blackwell 8.04%).
# With the measured collective share (2026-12-04, late): 7.41% (ampere 4.52%, hopper 7.76%, blackwell 8.26%, raised).
# With the expert-parallel exchanges waiting for SMs (latest): 7.25% (ampere 4.52%, hopper 7.51%, blackwell 8.10%).
# With Transformer Engine's casts (thirty-second session): 7.04% (ampere 4.56%, hopper 7.23%, blackwell 7.84%).
# With B300's attention derived from GB300's (thirty-third session): 6.99% (ampere 4.49%, hopper 7.24%, blackwell
# 7.76%).
# With the projections (thirty-fourth session): 7.0002%, RAISED by a hair (ampere 4.49%, hopper 7.14%, blackwell 7.84%
# RAISED: the refit's Blackwell attention 0.3152 -> 0.3140 and layer overhead).
# With the descent's restart (forty-fourth session): 6.89% (ampere 4.38%, hopper 7.06%, blackwell 7.71%).
# With the loss as each stack runs it (forty-fourth session): 6.81% (hopper 6.50%; ampere 4.385% and blackwell 7.85%
# RAISED: the Blackwell rows fitted on Ampere and Hopper take their refit's faster HBM, 0.705).
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): 6.69%
# (blackwell 7.53% lowered; ampere 4.39% -> 4.56% and hopper 6.51% -> 6.57% RAISED).
LOGO_STEP_MAPE_BOUND = 0.0670
LOGO_GENERATION_STEP_MAPE_BOUNDS = {"ampere": 0.0457, "hopper": 0.0658, "blackwell": 0.0753}


@pytest.fixture(scope="module")
def runs():
    return validation.load_runs()


@pytest.fixture(scope="module")
def holdout():
    return validation.load_runs(validation.default_holdout())


@pytest.fixture(scope="module")
def every_row(runs, holdout):
    """The fitted rows and the held-out ones: both are held to the same citation rules."""
    return runs + holdout


@pytest.fixture(scope="module")
def scored(runs):
    return [r for r in runs if not r.exclude]


@pytest.fixture(scope="module")
def summary(runs):
    return validation.summarise(validation.evaluate(runs))


@pytest.fixture(scope="module")
def out_of_sample(runs):
    """One `validate --leave-one-source-out` computation (16 fits: all rows, each of the 9 source groups left
    out, each of the 3 generations, each of the 3 MoE models), shared by the tests below."""
    from planner.validation.generalise import leave_one_out

    return leave_one_out(runs)


def test_step_time_mape_does_not_regress(summary, scored):
    assert summary["overall"]["step_time"]["n"] == len(scored)  # every row is scored
    assert summary["overall"]["step_time"]["mape"] <= STEP_MAPE_BOUND
    assert {g for g in summary if g != "overall"} == set(GROUP_STEP_BOUNDS), "a source group was added: bound it"
    for group, (mape, worst) in GROUP_STEP_BOUNDS.items():
        assert summary[group]["step_time"]["mape"] <= mape, group
        assert summary[group]["step_time"]["max_abs"] <= worst, group


def test_memory_mape_does_not_regress(summary, scored):
    assert summary["overall"]["memory"]["n"] == len([r for r in scored if r.measured.peak_memory_gib is not None])
    assert summary["overall"]["memory"]["mape"] <= MEMORY_MAPE_BOUND
    assert summary["overall"]["memory"]["max_abs"] <= MEMORY_MAX_BOUND
    with_peaks = {g for g in summary if g != "overall" and summary[g]["memory"]["n"]}
    assert with_peaks == set(GROUP_MEMORY_BOUNDS), "a source group with published peaks was added: bound it"
    for group, (mape, worst) in GROUP_MEMORY_BOUNDS.items():
        assert summary[group]["memory"]["mape"] <= mape, group
        assert summary[group]["memory"]["max_abs"] <= worst, group


def test_out_of_sample_mape_does_not_regress(out_of_sample, scored):
    loo = out_of_sample["leave_one_source_out"]
    assert loo["overall"]["step_time"]["n"] == len(scored)
    assert sorted(r["id"] for r in loo["rows"]) == sorted(r.id for r in scored)  # each row once
    assert set(loo["held_out"]) == set(LOO_GROUP_STEP_MAPE_BOUNDS), "a source group was added: bound it"
    assert loo["overall"]["step_time"]["mape"] <= LOO_STEP_MAPE_BOUND
    for group, bound in LOO_GROUP_STEP_MAPE_BOUNDS.items():
        assert loo["held_out"][group]["step_time"]["mape"] <= bound, group


# Leave one mixture-of-experts model out (2026-12-04): each MoE model's rows predicted by constants fitted on every
# other row, the other MoE models' included (leaving their one source out fits the MoE constants on no MoE row:
# 14.3%). Measured: 9.1% over the 100 MoE rows (in sample 8.8%); DeepSeek-V3 9.1%, Qwen3-235B-A22B 10.5%,
# Qwen3-30B-A3B 7.8%.
# With the measured collective share (2026-12-04, late): 8.35% (DeepSeek-V3 7.33% and Qwen3-30B-A3B 7.91%, raised;
# Qwen3-235B-A22B 9.82%).
# With the expert-parallel exchanges waiting for SMs (latest): 7.98% (DeepSeek-V3 6.92%, Qwen3-235B-A22B 9.09%,
# Qwen3-30B-A3B 7.93%).
# RAISED with Transformer Engine's casts (thirty-second session, above): 8.03% (DeepSeek-V3 6.85%, Qwen3-235B-A22B
# 9.10%, Qwen3-30B-A3B 8.12%), the refit's shared constants (HBM 0.662 -> 0.687, layer overhead 329 -> 362 us).
# With B300's attention derived from GB300's (thirty-third session): 7.85% (Qwen3-235B-A22B 9.04%, Qwen3-30B-A3B
# 7.05%; DeepSeek-V3 RAISED 6.85% -> 7.47%: its B300 rows, MLA attention at the derived rate, predicted fast).
# With the projections (thirty-fourth session): 7.83% (DeepSeek-V3 7.42%, Qwen3-235B-A22B 9.06%, Qwen3-30B-A3B 7.02%).
# RAISED with the descent's restart (forty-fourth session): 7.85% (DeepSeek-V3 7.41%, Qwen3-235B-A22B 9.05%;
# Qwen3-30B-A3B RAISED 7.02% -> 7.12%: its B200 rows at micro-batch 1, fast already, through the refit's MoE host
# wait 2.757 -> 2.723 ms).
# RAISED with the loss as each stack runs it (forty-fourth session): 7.96% (DeepSeek-V3 7.33% lowered; Qwen3-30B-A3B
# 7.39% and Qwen3-235B-A22B 9.16% RAISED: Transformer Engine's loss, 10 B per logit where 12 were priced, and the
# refit's layer overhead 376 -> 311 us make their fast B200 rows at micro-batch 1 faster still).
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): 7.77%
# (DeepSeek-V3 7.33%, Qwen3-30B-A3B 6.83% lowered; Qwen3-235B-A22B 9.16% -> 9.18% RAISED).
LOMO_STEP_MAPE_BOUND = 0.0778  # 0.0835 with GB300's GEMM rate (0.091 before) and with the measured share
LOMO_MODEL_STEP_MAPE_BOUNDS = {"deepseek-v3": 0.0734, "qwen3-235b-a22b": 0.0919, "qwen3-30b-a3b": 0.0683}


def test_moe_model_split_mape_does_not_regress(out_of_sample, scored):
    lomo = out_of_sample["leave_one_moe_model_out"]
    moe = [r for r in scored if r.model.moe is not None]
    assert lomo["overall"]["step_time"]["n"] == len(moe)
    assert sorted(r["id"] for r in lomo["rows"]) == sorted(r.id for r in moe)  # each MoE row once
    assert set(lomo["held_out"]) == set(LOMO_MODEL_STEP_MAPE_BOUNDS), "an MoE model was added: bound it"
    assert lomo["overall"]["step_time"]["mape"] <= LOMO_STEP_MAPE_BOUND
    for model, bound in LOMO_MODEL_STEP_MAPE_BOUNDS.items():
        assert lomo["held_out"][model]["step_time"]["mape"] <= bound, model


def test_generation_split_mape_does_not_regress(out_of_sample, scored):
    logo = out_of_sample["leave_one_generation_out"]
    assert logo["overall"]["step_time"]["n"] == len(scored)
    assert set(logo["held_out"]) == set(LOGO_GENERATION_STEP_MAPE_BOUNDS), "a GPU generation was added: bound it"
    assert logo["overall"]["step_time"]["mape"] <= LOGO_STEP_MAPE_BOUND
    for generation, bound in LOGO_GENERATION_STEP_MAPE_BOUNDS.items():
        assert logo["held_out"][generation]["step_time"]["mape"] <= bound, generation


# validation/holdout.yaml: rows no fit reads, scored with the shipped constants (fitted on runs.yaml). Reached
# when they were added (2026-12-01, predictions read after the rows were written): the six NeMo long-sequence
# Llama 2 7B rows with cp 2-32 at -11.0% .. -14.7% (the cp 1 rows of that table in runs.yaml go -0.7% at 4k to
# -8.5% at 16k: the model's attention is too fast at long sequences), torchtitan's Llama 3.1 8B cp 2/4/8 rows
# at +29.1% (64k), +0.3%, -1.8%, their peak memory +0.3%, +1.1%, +1.8%; llm-foundry's MPT rows on 8 H100 at
# 1k-65k tokens (the same trend: 7B +2.7% at 1k to -13.1% at 65k; 30B -13% .. -30%): step 10.99% over 23 rows,
# max 29.8%; memory max 1.8%. Then the rest of torchtitan's Dec 2024 page (70B 2D, 405B 1F1B / interleaved at
# 8k, cp 4 / cp 8): step -16.4% .. +11.2%, memory -18.1% .. +4.4%; all 29: step 10.90%, max 29.8%; memory MAPE
# 8.05% over 9, max 18.1%; with DTensor loss parallel's four fp32 logit shards: memory MAPE 5.91%, max 15.9%.
# Then (2026-12-01, later) Llama 3's Table 4 rows at 8k (405B, tp 8 x pp 16 x vpp 8 on 8,192 and 16,384 H100, no
# peak published), predictions read after the rows were written: -15.4% and -16.6%; all 31: step 11.23%, max 29.8%.
# RAISED 2026-12-04 with tp_async_grad and its refit (above): 0.1115 -> 0.1169, max 0.2950 -> 0.2977. The rows
# that moved were fast already (Llama 3 405B at 8k -15.3%/-16.5% -> -17.8%/-19.0%, its TP assumed asynchronous;
# NeMo 24.03's long sequences; llm-foundry's long sequences through the refit's Hopper attention fraction):
# the H100 optimism validation/README.md "Held-out rows" describes, which nothing fitted here explains.
# Lowered 2026-12-04 with GB300's GEMM rate and its refit: 0.1169 -> 0.1134, max 0.2977 -> 0.2947; and with the
# measured collective share: 0.1125, max 0.2920; with the expert-parallel exchanges waiting for SMs: 0.1083, max 0.2872.
# With Transformer Engine's casts (thirty-second session): 0.1066, max RAISED 0.2872 -> 0.2943 (MPT-30B at 8k on 8
# H100, bf16, fast already: the refit's HBM efficiency and layer overhead).
# RAISED with B300's attention derived from GB300's (thirty-third session): 0.1066 -> 0.1077 (max 0.2861), the H100
# rows through the refit's Hopper attention fraction (0.4331 -> 0.4381) and layer overhead (362 -> 339 us).
# RAISED with the projections and their refit (thirty-fourth session): 0.1077 -> 0.1106, max 0.2861 -> 0.2884, the
# rows fast already (NeMo's and MPT's long sequences) faster through the refit's Hopper attention (0.4381 -> 0.4447).
# RAISED with the loss as each stack runs it and its refit (forty-fourth session): 0.1106 -> 0.1179 (max 0.2915), the
# rows fast already (NeMo's long sequences -13% .. -15% -> -14% .. -18%, MPT's at 16k-64k) faster through the refit's
# Hopper attention (0.4463 -> 0.4672) and half length (3696 -> 3949); all 159 held-out rows 12.79% -> 12.58%.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): RAISED
# 0.1179 -> 0.1233 (max 0.2968), the long-sequence rows, fast already (NeMo's Llama 2 7B at 64k-1M, MPT at 32k-65k,
# torchtitan's 8B at 128k-256k), 2-3 points faster through the refit's Hopper attention (0.4672 -> 0.4858) and half
# length (3949 -> 4096); the Llama 3 paper's 405B rows 1.9 points better; all 278 held-out rows 11.88% -> 11.55%.
HOLDOUT_STEP_BOUNDS = (0.1234, 0.2969)
HOLDOUT_MEMORY_BOUNDS = (0.059, 0.155)  # 0.0584, 0.154 since 2026-12-01 (slack on per-step bytes)
# Megatron-LM's H100 weak-scaling table (group megatron-core-2024, 9 rows, GPT 1.7B-462B at tp 1-8, pp 1-16),
# added 2026-12-02 to judge where the search lands for dense H100 bf16 plans; bounded on its own so that the
# bound above keeps meaning the 31 rows it was set on. First read: -12.1% .. +22.3%, MAPE 14.0%.
# RAISED with the measured collective share (2026-12-04, late): max 0.2238 -> 0.2410, the 32B row (tp 8 with TP
# overlap, predicted slow already), whose overlapped TP collectives now cost the GEMMs beside them 0.19 of each
# second, not 0.12; MAPE 0.1387 -> 0.1340.
# RAISED with the expert-parallel exchanges waiting for SMs (latest): MAPE 0.1340 -> 0.1358 (max 0.2410 -> 0.2331), the
# fast rows from 119B up faster (-16.2% .. -20.1%) through the refit's layer overhead (391 -> 329 us); no MoE layer.
# With Transformer Engine's casts (thirty-second session): MAPE 0.1358 -> 0.1334, max RAISED 0.2331 -> 0.2393 (the
# 32B row at tp 8, bf16, predicted slow already; the refit's layer overhead 329 -> 362 us).
# RAISED with B300's attention derived from GB300's (thirty-third session): MAPE 0.1334 -> 0.1342 (max 0.2361), the
# fast rows from 119B up faster through the refit's layer overhead (362 -> 339 us).
# RAISED with the parameters Megatron-core holds whole on every TP rank (forty-first session): max 0.2370 -> 0.23700127,
# the 32B row (predicted slow already), whose replicated norms add to the gradient sync; MAPE 0.1347.
# RAISED with the descent's restart (forty-fourth session): max 0.2370 -> 0.2400 (the 32B row, slow already, through the
# refit's layer overhead 355 -> 376 us); MAPE 0.1338.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): MAPE 0.1338 ->
# 0.1150; max RAISED 0.2400 -> 0.2464 (the 32B row, slow already, through the refit's layer overhead 311 -> 399 us).
MEGATRON_CORE_2024_STEP_BOUNDS = (0.1151, 0.2465)
# NVIDIA's Megatron-core MoE benchmarks outside ../shared/validation (group mcore-moe-2025, 11 scored rows: the
# Megatron-MoE-ModelZoo Qwen3-235B-A22B rows on H100, GB200 and GB300, its Mixtral 8x22B recipe on 128 H100 in BF16
# and blockwise FP8, the last row of Megatron-LM's DeepSeek-V3 GB200 guide), added 2026-12-03 to judge the MoE
# region the search lands in; bounded on its own. First read: -20.7% .. +73.2%, MAPE 18.8%; without the two rows
# the model cannot price (Megatron-FSDP with EP, +55.2%; GB200 at 131k tokens, +73.2%, whose attention the fitted
# Blackwell rate prices at half the measured cuDNN kernel's) 8.7% over 9.
# RAISED with GB300's GEMM rate and its refit (2026-12-04, later): 0.1893 -> 0.2001, max 0.733 -> 0.803, all of it
# the GB200 row at 131k tokens (+73.3% -> +80.3%), 80% attention, which the refit's Blackwell attention fraction
# (0.3319 -> 0.3177) prices slower still: the fitted rate already stood at half the measured kernel's there.
# RAISED again with the measured collective share (2026-12-04, late): max 0.803 -> 0.822, the same GB200 row at
# 131k (+82.2%), through the refit's Blackwell attention fraction (0.3177 -> 0.3121); MAPE 0.2001 -> 0.1980.
# Latest: 0.1988, max 0.8184. RAISED with Transformer Engine's casts (thirty-second session): max 0.8184 -> 0.8296,
# the same GB200 row at 131k (MXFP8, whose casts did not change), through the refit's Blackwell attention fraction
# (0.3133 -> 0.3127) and half length (3219 -> 3422); MAPE 0.1985.
# With B300's attention derived from GB300's (thirty-third session): 0.1967, max 0.8242.
# RAISED with the projections' refit (thirty-fourth session): max 0.8242 -> 0.8278 (GB200 at 131k, through the
# Blackwell attention fraction 0.3152 -> 0.3140); MAPE 0.1970.
MCORE_MOE_2025_STEP_BOUNDS = (0.1971, 0.8278)
# Five of its rows became expressible later the same day and are bounded on their own, so that the bound above
# keeps meaning the 11 rows it was set on: the four H100 long-context rows (Qwen3-235B-A22B at 16k-128k tokens,
# CP 1-8, the whole MoE layer recomputed: the moe recompute module), +21.9% .. +37.3%, all slow, the error growing
# with the attention's share (the fitted Hopper attention rate; validation/README.md, "Held-out rows"); and the
# GB200 MXFP8 row that offloads expert_fc1 and moe_act to host (Plan.offload_modules), -18.5%. First read of the
# five: MAPE 28.4%.
# RAISED with GB300's GEMM rate (2026-12-04, later): MAPE 0.2710 -> 0.2701, max 0.3560 -> 0.3744, the H100 row at
# 128k tokens, its attention priced through the refit's half length (3068 -> 3409).
# Lowered with the measured collective share (2026-12-04, late): 0.2553, max 0.3453. RAISED with the expert-parallel
# exchanges waiting for SMs (latest): 0.2653, max 0.3664, the four H100 long-context rows (slow already: +19.6% ..
# +36.6%), whose attention the refit's Hopper fraction (0.4408 -> 0.4337) prices slower; none overlaps its exchanges.
# RAISED with Transformer Engine's casts (thirty-second session): 0.2708, max 0.3787, the same four bf16 rows, through
# the refit's half length (3219 -> 3422), which prices long-sequence attention slower.
# With B300's attention derived from GB300's (thirty-third session): 0.2706, max 0.3757.
# With the projections' refit (thirty-fourth session): 0.2612, max 0.3565 (the H100 rows, the Hopper attention).
# RAISED with the descent's restart (forty-fourth session): 0.2624, max 0.3623 (the H100 long-context rows, slow
# already, through the refit's half length 3485 -> 3696).
MCORE_MOE_LATER_STEP_BOUNDS = (0.2624, 0.3624)
# torchtitan's June 2025 async-TP page (group torchtitan-2025: Llama 3.1 70B FSDP 32 x TP 8 and 8B FSDP 8 x TP 8 on
# H100 96 GB at 500 W, bf16 and float8 tensorwise and rowwise, vanilla and async TP; 10 scored rows, the two vanilla
# rowwise ones excluded as the page flags them), added in the thirty-fourth session before their predictions were
# read; bounded on its own. First read: -43.5% .. +3.9%, MAPE 16.4%: float8 tensorwise on 70B within 4%, bf16 70B
# -5%/-11%, the 8B rows -13% .. -20% and float8 rowwise -33% (70B) and -43.5% (8B), which the model prices like
# tensorwise while the page measures it slower than bf16 (validation/README.md, "Held-out rows").
# With the projections as the model code wrote them (Plan.projections "separate") and the refit, the same session:
# 14.7%, max 42.4% (8B bf16 -14.4% -> -10.4%, async -20.3% -> -15.9%; 70B bf16 -5.3% -> -1.6%, tensorwise +3.9% ->
# +6.5%; rowwise -33.2% / -43.5% -> -31.2% / -42.4%).
# RAISED by a hair with the descent's restart (forty-fourth session): 0.14685; RAISED with the loss (the same session):
# 0.1492 (max 0.4298), the loss read as compiled (torchtitan 820504e, 10 B a logit where 12 were priced) on rows
# predicted fast already.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): RAISED
# 0.1492 -> 0.1526 (max 0.4344), the 8B and 70B AsyncTP rows, fast already, faster through the refit's attention.
TORCHTITAN_2025_STEP_BOUNDS = (0.1526, 0.4344)
# NVIDIA's MLPerf Training v5.0 and v5.1 closed submissions (group mlperf-2025: Llama 3.1 405B on 512-8,192 H100 in
# FP8, 256-5,120 GB200 and 512 GB300 in FP8 and NVFP4; Llama 3.1 8B on 8-512 GB200 and GB300 in FP8 and NVFP4; 17 rows
# of real training, step times from the MLLOG logs), added in the thirty-fifth session before their predictions were
# read; bounded on its own. First read: -34.8% .. +14.4%, MAPE 10.49%: the 405B H100 rows -2.1% .. -8.9% (more the
# more GPUs), the 405B GB200/GB300 rows -3.4% .. -14.5%, the 8B rows at 72 GPUs within 3%, at 8 GPUs +6% / +14%
# (per-layer CUDA graphs the plan cannot say), at 512 GPUs -31% / -35% (one micro-batch per step, 89 ms;
# validation/README.md, "Held-out rows").
# Nine more rows the same session, before their predictions were read (other submitters' runs of the same NeMo code:
# DGX B200 405B at 256 and 448 GPUs and 8B at 64 and 256, HGX H200 405B at 512 and 1,024, 8-GPU B200/B300 8B). Their
# first read: MAPE 5.98%, max 14.0% (405B B200 -11.5% / -12.5%, H200 -2.4% / -2.9%, 8B within 4.3% but -14.0% at 256
# B200s, one micro-batch a step, as the 512-GPU NVIDIA rows); all 26: MAPE 8.93%, max 34.8%.
# With the rank order the configs set (Plan.rank_order tp-cp-pp-dp, TP_PP_DP_MAPPING), the same session: 8.25%, max
# 34.8%; the GB200 NVFP4 405B rows -3.4% / -8.8% / -11.7% -> -1.7% / +1.7% / +3.5% (512, 2,560, 5,120 GPUs: a replica
# per rack, the gradient sync across racks), the other two multi-rack 405B rows within 0.5 points.
# Eleven more rows later that session, before their predictions were read, with the rank order their configs set
# (CoreWeave/IBM's GB200 405B FP8 at 512-2,496 GPUs, 8-128-GPU B200/B300 8B). Their first read: MAPE 8.12%, max 14.0%
# (the five GB200 FP8 rows -13.1% .. -14.0%, flat with scale, as NVIDIA's own v5.0 GB200 pair; the 8B -1.8% .. +8.6%);
# all 37: MAPE 8.21%, max 34.8%.
# The held-out rows whose sources say they ran per-layer CUDA graphs set layer_cuda_graphs (fifty-fourth session,
# after the refit; no constant moved): the four Llama 3.1 8B NVFP4 rows on 8 GPUs
# +2.7% .. +13.9% -> -0.1% .. +10.8%; MAPE 7.76% -> 7.43% (max 33.6%).
MLPERF_2025_STEP_BOUNDS = (0.0744, 0.3360)
# NVIDIA's MLPerf Training v6.0 closed submissions (group mlperf-2026, read in a fork of the results repository):
# DeepSeek-V3 671B pre-training on 256 and 512 GB300 and 512-8,192 GB200 (real routing, MTP, MXFP8, HybridEP with the
# 1F1B A2A overlap, whole-iteration graphs), gpt-oss 20B on 512 GB300, Llama 3.1 405B on 2,048 GB300 (NVFP4) and 8B on
# 1,024 GB200 (FP8); 9 rows added in the thirty-sixth session before their predictions were read; bounded on their
# own. First read: -57.3% .. +3.6%, MAPE 28.2%: DeepSeek-V3 on GB300 +3.6% / +1.7%, on GB200 (TP 2) -21.5% at 512
# GPUs to -48.0% at 8,192; the three one-micro-batch-per-step runs (gpt-oss, 8B) -50% / -57%, 36-52 ms a step
# missing; 405B -10.6% (validation/README.md, "Held-out rows").
# A tenth row later that session, written before mxfp4 was a precision and before any prediction of it: AMD's Llama
# 3.1 8B on 8 MI355X in MXFP4 (Primus), the first AMD run here: +0.3%. All ten: MAPE 25.4%, max 57.3%.
# Seven more of the same recipe later still, before their predictions were read: Oracle's, MiTAC's and
# GigaComputing's on MI355X (-3.1%, -2.4%, -2.4%) and four on MI350X, a catalog entry since (AMD's, MiTAC's two,
# Cisco's on two nodes: -15.0% .. -19.5%: the runs are 1.25x slower than on MI355X, the model 1.06x). All 17: MAPE
# 19.3%, max 57.3%.
MLPERF_2026_STEP_BOUNDS = (0.1931, 0.5735)
# The Megatron-core MoE team's report (arXiv:2603.07685, Table 11, Megatron-Core v0.16; group mcore-moe-report-2026):
# DeepSeek-V3 on 256 GB300 and 256 GB200 in MXFP8, 256 GB200 in BF16 and 1,024 H100 in blockwise FP8, Qwen3-235B-A22B
# on 256 H100 in BF16 (forced balance; the ModelZoo launch lines where published); 5 rows added in the thirty-seventh
# session before their predictions were read; bounded on their own. First read: -15.1% .. +3.8%, MAPE 7.99%:
# DeepSeek-V3 GB200 MXFP8 -5.0%, GB300 MXFP8 (1F1B overlap, no recompute) -11.6%, GB200 BF16 +3.8%, H100 FP8 -4.4%;
# Qwen3 H100 -15.1%, the layout of mcore-moe-2025's a2a-overlap row (-3.0%) with the router and preprocessing in
# CUDA graphs, TP overlap and the fused loss, which the model credits 24% and the runs 13% (validation/README.md,
# "Held-out rows").
# With the loss as each stack runs it (forty-fourth session): 0.0733, max RAISED 0.1513 -> 0.1575 (the Qwen3 H100 row,
# fast already, whose Transformer Engine loss moves 10 B a logit where 12 were priced).
MCORE_MOE_REPORT_2026_STEP_BOUNDS = (0.0733, 0.1575)
# torchtitan with DeepEP on B200 (group torchtitan-moe-2025; NousResearch/torchtitan #19, the README also in
# pytorch/torchtitan refs/pull/2465): Qwen3-30B-A3B, FSDP x EP 8 on 8-128 GPUs, full AC, compiled, forced balance, LBS
# 8 and 10, with peak memory; and torchtitan's default all-to-all EP on 8 GPUs. 7 rows added in the thirty-seventh
# session before their predictions were read; bounded on their own. First read: steps -6.3% .. -8.9% with DeepEP, the
# all-to-all row -38.3% (the model prices both dispatchers alike there: 2.04 s against 3.30 s measured); peak memory
# -42% at 8 GPUs to -67% at 128 (98 GiB against 168; 38 against 115): the model's sharded states fall with the GPU
# count as the runs' do (60 GiB against 53 from 8 to 128 GPUs), its per-sequence memory is 3.7 GiB where the runs take
# about 13.7 (validation/README.md, "Held-out rows").
# RAISED by a hair with the descent's restart (forty-fourth session): 0.11744, max 0.3830 (the all-to-all row).
TORCHTITAN_MOE_2025_STEP_BOUNDS = (0.1175, 0.3831)
TORCHTITAN_MOE_2025_MEMORY_BOUNDS = (0.5880, 0.6765)
# NVIDIA's Megatron-Bridge tables for GPT-OSS 120B (group mbridge-gpt-oss), a model no fitted row has (128 experts of
# top 4, hidden and expert width 2880, 64 heads of head_dim 64, attention sinks, a 128-token sliding window every other
# layer, linear biases): 64 GPUs of H100, B200, B300, GB200 and GB300, BF16 (25.11-26.04.01) and MXFP8 (26.06, 26.08),
# each release's recipe read at its code; 27 rows added in the thirty-eighth session before their predictions were
# read; bounded on their own. First read: every row fast, -15.2% .. -41.3%, MAPE 27.3%: H100 -17% .. -20%, GB300 -22%
# .. -25%, GB200 and B200 -15% .. -35%, B300 -33% .. -41% (the x86 B300 host of validation/README.md); the same fraction
# in BF16 and MXFP8 and at 4k and 8k tokens, so what is missing scales with the layer's work; not identified
# (validation/README.md, "Held-out rows"). Lowered in the thirty-ninth session, when Megatron-LM's unfused YaRN RoPE
# came to be priced (Plan.rope_fusion, read at each release's code): MAPE 27.3% -> 24.9%, max 41.3% -> 39.9%.
# Lowered in the forty-third session, when the experts' activation prologue came to be priced (Plan.moe_act_prologue:
# Megatron-core's fused quick-GEGLU clamps with eager ops and waits on the host once per forward pass, read in
# fusions/fused_bias_geglu.py; validation/README.md "The experts' activation prologue"; no constant refitted): MAPE
# 24.9% -> 12.5%, max 39.9% -> 31.7%; the H100 rows went from -15..-18% to +18..+22%.
# With the descent's restart (forty-fourth session): MAPE 12.43%, max RAISED 31.72% -> 31.74% (a B300 row, fast
# already).
MBRIDGE_GPT_OSS_STEP_BOUNDS = (0.1244, 0.3175)
# NVIDIA's DGX Cloud Benchmarking recipes (group dgxc-2025; NVIDIA/dgxc-benchmarking @1f6d9f40, release v25.05.04, NeMo
# 25.04): Llama 3.1 405B on 512 H100 (TP 8 x PP 8 x CP 2, interleaved: the layout suggest picks for the 405B bench case)
# and 128-512 GB200, Nemotron-4 15B on 16 H100, Nemotron-4 340B on 256 H100 and 128-512 GB200 (weak and strong
# scaling), BF16 and FP8, every setting read in the NeMo performance scripts at the commits the recipes pin; 24 rows
# added in the forty-sixth session before their predictions were read (the 340B rows' head size corrected after:
# validation/README.md, "NVIDIA's DGX Cloud Benchmarking recipes"); bounded on their own. First read: every row fast,
# -2.4% .. -29.2%, MAPE 18.1%: the 15B on H100 -2% / -6%, 405B on H100 -9% / -7%, 340B on H100 -15% / -13%, on GB200
# -13% .. -29%; the
# error grows with the TP degree under the TP overlap, which the model credits more than the runs show. Five more
# later that session, before their predictions were read: the release's DeepSeek-V3 BF16 rows (token drop, MTP,
# all-to-all): -15.0% / -19.4% on 512 / 1,024 H100, -56% .. -57% on 128-512 GB200 (measured 34.2 s, 10% MFU: the
# runs 1.4x faster than on H100, the model 2.8x). All 29: MAPE 22.0%, max 57.0%. Eight more later still, the same
# way: Grok-1 314B as NeMo runs it (8 experts of width 32768, top 2, token drop), every row slow: +8% / +22% on 512 H100
# (FP8 / BF16), +10% .. +15% on 128-512 GB200 (per-layer CUDA graphs), about what the fitted host wait charges the
# padded layers (validation/README.md). All 37: MAPE 20.1%, max 57.0%. Eight more in the forty-eighth session, the
# same way: Llama 4 Maverick (128 experts of 8192, top 1, MoE every second layer, token drop), -11.5% .. -16.4% on
# 128-512 GB200 (BF16 and FP8, PP 2 x VP 12, EP 64), +4.2% / -0.0% on 512 H100 (BF16 / FP8, TP 4, EP 128 x ETP 4);
# GB200 fast as this group's other GB200 rows are. All 45: MAPE 18.4%, max 57.0%.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): MAPE 18.4% ->
# 17.4% (the GB200 Nemotron-4 340B rows -26% .. -29% -> -22% .. -26%, their flushes' hops); max RAISED 0.56974 ->
# 0.57024 (DeepSeek-V3 on 512 GB200).
# The held-out rows whose sources say they ran per-layer CUDA graphs set layer_cuda_graphs (fifty-fourth session,
# after the refit; no constant moved): MAPE RAISED 17.4% -> 18.6%, the twelve GB200 Nemotron-4 340B rows,
# fast already, -19% .. -26% -> -22% .. -31% without the per-layer launch overhead.
DGXC_2025_STEP_BOUNDS = (0.1864, 0.5703)
# The same repository's release v25.03 (group dgxc-2024: NeMo 24.12's NeMo-1 Hydra recipes, every setting read in the
# yaml and configure.sh the release ships): Llama 3.1 8B on 8-128 H100 (TP 1 x CP 2), 70B on 64-2048 H100 (TP 4 x PP 4
# x CP 2, VP 5) and GPT-3 175B on 128-2048 H100 (TP 4 x PP 8, VP 6), BF16 and FP8; 32 rows added in the forty-eighth
# session before their predictions were read. First read: the 70B -2.9% .. +2.0%, GPT-3 -2.9% .. -10.1% (faster
# predicted as the GPU count grows: the runs slow 2-6% from 128 to 2048 GPUs, the model not at all), the 8B slow,
# +5.1% .. +8.2% in BF16 and +13.1% .. +16.6% in FP8 (the same layout in NeMo 24.07, fitted, measured 10.68 s where
# NeMo 24.12 ran it in 9.44 s: software the plan does not see). MAPE 5.8%, max 16.6%. Then, the same session and
# the same way, the release's Nemotron-4 rows: 15B at TP 4 on 16-2048 H100 -2.8% .. -5.2% (BF16) and -1.5% .. +2.1%
# (FP8); 340B at TP 8 x PP 8, VP 12 on 128-2048 H100 (NeMo 24.09) +3.8% .. +6.0% (BF16, CP 2, attention recomputed)
# and -3.9% .. -12.0% (FP8), the FP8 error growing with the GPU count as GPT-3's. All 58: MAPE 5.0%, max 16.6%.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): MAPE 5.0% ->
# 4.6%; max RAISED 0.16587 -> 0.16606 (the 8B FP8 row at 8 GPUs, slow already).
DGXC_2024_STEP_BOUNDS = (0.0464, 0.1661)
# NeMo's performance summaries (group nemo-2025): NeMo 25.02 on DGX-B200 (delayed-scaling FP8) and NeMo 25.04 on
# DGX-GB200 (current-scaling FP8), GPT-3 175B, Llama 3 8B / 70B / 405B, Nemotron-4 15B / 340B, Mixtral 8x7B (EP 8,
# per-layer CUDA graphs, padded experts) and 8x22B at 65,536 tokens (TP 2 x PP 4 x CP 8, EP 8); settings read in NeMo
# v2.2.0 / v2.3.0's performance scripts; 16 rows added in the forty-ninth session before their predictions were read.
# First read: the dense rows at TP >= 4 fast, -7.9% .. -19.8% (GPT-3, 405B, 340B), the 15B -20.1% / -10.0%, the 8B
# -7.8% (B200) / +11.1% (GB200, graphed), the 70B -7.6% / -3.3%; Mixtral 8x7B -7.0% / +7.9%, 8x22B at 64k slow,
# +11.2% / +21.1%. MAPE 12.1%, max 21.1%.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): MAPE 12.1% ->
# 11.1% (GB200 Nemotron-4 340B -19.8% -> -16.0%, GPT-3 175B -7.9% -> -4.2%); max RAISED 21.1% -> 21.7% (Mixtral 8x22B
# at 64k on GB200, slow already).
# The held-out rows whose sources say they ran per-layer CUDA graphs set layer_cuda_graphs (fifty-fourth session,
# after the refit; no constant moved): MAPE RAISED 11.1% -> 12.0%, max 21.7% -> 22.1%
# (GB200 GPT-3 175B -4.2% -> -11.1%, Nemotron-4 340B -16.0% -> -21.6%, 15B on B200 -19.8% -> -22.1%, fast already;
# Llama 3 8B on GB200 +10.9% -> +8.3%).
NEMO_2025_STEP_BOUNDS = (0.1201, 0.2214)


def later_moe(run) -> bool:
    """The mcore-moe-2025 rows added after its bound was set (see MCORE_MOE_LATER_STEP_BOUNDS)."""
    return run.group == "mcore-moe-2025" and ("-h100-s" in run.id or run.id.endswith("-offload"))


def assert_group_within(rows, label: str, n: int, bounds: tuple[float, float]) -> dict:
    """The held-out `rows` are all scored (n of them) and their step-time MAPE and largest error stay within
    `bounds`; the figures are printed for the log. Returns the rows' group_errors (step time and memory)."""
    errors = validation.group_errors(validation.evaluate(rows))
    step = errors["step_time"]
    print(f"{label} held out: step MAPE {step['mape']:.4f}, max {step['max_abs']:.4f}")
    assert step["n"] == len(rows) == n
    assert step["mape"] <= bounds[0] and step["max_abs"] <= bounds[1]
    return errors


def test_megatron_core_h100_weak_scaling_rows(holdout):
    rows = [r for r in holdout if r.group == "megatron-core-2024"]
    assert_group_within(rows, "megatron-core-2024", 9, MEGATRON_CORE_2024_STEP_BOUNDS)


def test_mcore_moe_benchmark_rows(holdout):
    rows = [r for r in holdout if r.group == "mcore-moe-2025" and not r.exclude and not later_moe(r)]
    assert_group_within(rows, "mcore-moe-2025", 11, MCORE_MOE_2025_STEP_BOUNDS)


def test_mcore_moe_rows_added_later(holdout):
    rows = [r for r in holdout if later_moe(r)]
    assert not any(r.exclude for r in rows)
    assert_group_within(rows, "mcore-moe-2025 added later,", 5, MCORE_MOE_LATER_STEP_BOUNDS)


def test_torchtitan_async_tp_rows(holdout):
    rows = [r for r in holdout if r.group == "torchtitan-2025"]
    assert len(rows) == 12
    assert all("rowwise" in r.id and "asynctp" not in r.id for r in rows if r.exclude)
    assert_group_within([r for r in rows if not r.exclude], "torchtitan-2025", 10, TORCHTITAN_2025_STEP_BOUNDS)


# Held-out groups scored whole (no row excluded): group -> (rows, step-time bounds).
WHOLE_GROUPS = {"mlperf-2025": (37, MLPERF_2025_STEP_BOUNDS), "mlperf-2026": (17, MLPERF_2026_STEP_BOUNDS),
                "mcore-moe-report-2026": (5, MCORE_MOE_REPORT_2026_STEP_BOUNDS),
                "torchtitan-moe-2025": (7, TORCHTITAN_MOE_2025_STEP_BOUNDS),
                "mbridge-gpt-oss": (27, MBRIDGE_GPT_OSS_STEP_BOUNDS), "dgxc-2025": (45, DGXC_2025_STEP_BOUNDS),
                "dgxc-2024": (58, DGXC_2024_STEP_BOUNDS), "nemo-2025": (16, NEMO_2025_STEP_BOUNDS)}
# Held-out groups each bounded by a test of its own: the three the tests above bound, and every WHOLE_GROUPS group.
SEPARATELY_BOUNDED = ("megatron-core-2024", "mcore-moe-2025", "torchtitan-2025", *WHOLE_GROUPS)


def whole_group_within(holdout, group: str) -> dict:
    """A WHOLE_GROUPS group's rows: none excluded, every one scored, within its bounds; their group_errors."""
    rows = [r for r in holdout if r.group == group]
    assert not any(r.exclude for r in rows)
    n, bounds = WHOLE_GROUPS[group]
    return assert_group_within(rows, group, n, bounds)


# Every WHOLE_GROUPS group but torchtitan-moe-2025, whose test below bounds its memory too.
@pytest.mark.parametrize("group", [g for g in WHOLE_GROUPS if g != "torchtitan-moe-2025"])
def test_whole_held_out_group(holdout, group):
    whole_group_within(holdout, group)


def test_torchtitan_moe_rows(holdout):
    memory = whole_group_within(holdout, "torchtitan-moe-2025")["memory"]
    print(f"torchtitan-moe-2025 held out: memory MAPE {memory['mape']:.4f}, max {memory['max_abs']:.4f}")
    assert memory["n"] == 6 and memory["mean_signed"] < 0  # every printed peak above the model's
    mape_bound, max_bound = TORCHTITAN_MOE_2025_MEMORY_BOUNDS
    assert memory["mape"] <= mape_bound and memory["max_abs"] <= max_bound


def test_held_out_rows_are_never_fitted_and_do_not_regress(runs, holdout):
    assert holdout and not {r.id for r in holdout} & {r.id for r in runs}  # no fit reads holdout.yaml
    holdout = [r for r in holdout if r.group not in SEPARATELY_BOUNDED]  # each bounded on its own, above
    results = validation.evaluate(holdout)
    assert len(results) == len(holdout)
    errors = validation.group_errors(results)
    step, memory = errors["step_time"], errors["memory"]
    print(f"held out: step MAPE {step['mape']:.4f}, max {step['max_abs']:.4f}; memory MAPE {memory['mape']:.4f}, "
          f"max {memory['max_abs']:.4f}")
    assert step["mape"] <= HOLDOUT_STEP_BOUNDS[0] and step["max_abs"] <= HOLDOUT_STEP_BOUNDS[1]
    assert memory["n"] == 9 and memory["mape"] <= HOLDOUT_MEMORY_BOUNDS[0] and memory["max_abs"] <= HOLDOUT_MEMORY_BOUNDS[1]


def test_shipped_step_errors_by_gpu_are_the_out_of_sample_ones(out_of_sample, runs, holdout):
    """validation/step_errors_by_gpu.yaml (what `estimate`, `suggest` and `size` say of the model's accuracy on a
    plan's GPU) is what these leave-one-source-out fits, the held-out rows and the shipped constants give
    (python -m planner.validation.accuracy --write): a model change or refit that moves it must regenerate it."""
    from planner.analysis import accuracy
    from planner.validation import accuracy as computed

    fresh = {(e["gpu"], e["precision"], e["fp8_scaling"], e["kind"]): e
             for e in computed.compute(out_of_sample, runs, holdout)}
    shipped = accuracy.shipped()
    assert set(fresh) == set(shipped)
    for key, record in fresh.items():
        assert (record["left_out"], record["generation"]) == (shipped[key]["left_out"], shipped[key]["generation"]), key
        for figure in ("shipped", "out_of_sample"):
            stats, kept = record[figure], shipped[key][figure]
            assert stats["n"] == kept["n"] and stats["worst_run"] == kept["worst_run"], (key, figure)
            for name in ("mape", "max_abs", "mean_signed"):
                assert stats[name] == pytest.approx(kept[name], abs=1e-6), (key, figure, name)


def test_held_out_constants_never_saw_the_held_out_rows(out_of_sample, scored):
    groups = {r.group for r in scored}
    for group, s in out_of_sample["leave_one_source_out"]["held_out"].items():
        assert s["train_rows"] == len([r for r in scored if r.group != group]), group
    assert len(out_of_sample["leave_one_source_out"]["held_out"]) == len(groups)


def test_every_row_is_legal_and_cited(every_row):
    import re

    # a citation someone can follow: an arXiv id, a repository at a commit, or a URL
    citation = re.compile(r"arXiv:\d{4}\.\d{4,5}|@[0-9a-f]{7,40}\b|https?://")
    for run in every_row:
        assert citation.search(run.source), (run.id, run.source)
        assert run.measured.step_time_s > 0
        if run.measured.step_time_kind == "derived":
            assert run.measured.derivation, run.id


# Plan and cluster settings that select a mechanism of the cost model for a row: when a row sets one,
# its notes say where it was read or `assumed` lists it.
MECHANISMS = ("overlap_dp_comm", "overlap_pp_comm", "fused_elementwise", "cross_entropy", "zero3_gather_unit",
              "grad_reduce", "grad_dtype", "zero3_reshard", "fp8_recipe", "weight_casts", "bf16_layers_start",
              "bf16_layers_end", "tp_comm_overlap", "offload_layers", "offload_modules", "lowp_param_gather",
              "recompute_modules",
              "ep_overlap", "ep_dispatch", "moe_cuda_graphs", "full_iteration_graph", "layer_cuda_graphs",
              "optimizer_states", "fp8_attention", "cp_comm", "attention_kernel", "tp_async_grad", "projections",
              "rank_order")
# Under a low-precision format these select how it runs whether or not the row sets them; so do
# tp_comm_overlap under tensor parallelism and, without that overlap, tp_async_grad.
LOW_PRECISION = {"fp8", "mxfp8", "nvfp4"}
LOW_PRECISION_SETTINGS = ("fp8_recipe", "weight_casts", "lowp_param_gather")


# A row whose model is named as a catalog model has the catalog's architecture. A field a row's model block leaves out
# takes the schema's GPT-2-style default (LayerNorm, learned positions, biases on every linear), which 141 Llama
# rows, three Nemotron rows (also recorded as GELU) and the two BLOOM rows (ALiBi) took until the forty-eighth session;
# no step time moved when they were corrected (the cost model prices none of those fields), but a row is a claim about
# a run.
# Allowed to differ, each said in its row: the vocabulary (the tokenizer's size or its padded table), an MoE's capacity
# factor (token drop with padded experts), multi-token prediction (a run may train without it), and the MPT benchmark
# rows' learned positions and biases (LLM Foundry's benchmark yamls set learned_pos_emb, no ALiBi and no no_bias; the
# catalog entry is the released checkpoint).
ARCHITECTURE = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_hidden_size", "mlp",
                "normalization", "position_embedding", "rotary_percent", "linear_bias", "tie_embeddings", "head_dim",
                "qk_norm", "nope_every", "attention_window", "mla")
BENCHMARK_ARCHITECTURE = {"mpt-7b": {"position_embedding", "linear_bias"}}


def test_rows_named_after_a_catalog_model_have_its_architecture(every_row):
    from planner.inputs.catalogs import model_catalog
    from planner.inputs.loading import load_model_spec

    def experts(model):
        """The model's experts less the training settings a row may state or leave out: the capacity factor (token
        drop) and the load-balancing loss (aux_loss_*, which a launch states and the cost model does not price)."""
        return model.moe and model.moe.model_copy(update={"capacity_factor": None, "aux_loss_coeff": None,
                                                          "aux_loss_scope": "micro_batch"})

    catalog = {name: load_model_spec(str(path)) for name, path in model_catalog().items()}
    named = [r for r in every_row if r.model.name in catalog]
    assert len(named) > 100
    for run in named:
        row, entry = run.model, catalog[run.model.name]
        differ = {f for f in ARCHITECTURE if getattr(row, f) != getattr(entry, f)}
        differ |= {"moe"} if experts(row) != experts(entry) else set()
        assert differ <= BENCHMARK_ARCHITECTURE.get(row.name, set()), (run.id, differ)


def test_every_assumed_entry_names_a_setting(every_row):
    """`assumed` entries are a plan or cluster field, 'gpu' (the catalog GPU's unprinted figures) or the
    model's seq_length (a training setting, where a table does not print it; the architecture fields come
    from the model's config), optionally followed by ': why'."""
    from planner.inputs.specs import ClusterSpec, PlanSpec

    known = set(PlanSpec.model_fields) | set(ClusterSpec.model_fields) | {"gpu", "seq_length"}
    for run in every_row:
        for entry in run.assumed:
            assert entry.split(":", 1)[0] in known, (run.id, entry)


def test_every_mechanism_setting_is_cited_or_assumed(every_row):
    from planner.inputs.catalogs import resolve_gpu

    for run in every_row:
        text = (run.notes or "") + " " + " ".join(run.assumed)
        for field in MECHANISMS:
            if field in run.plan.model_fields_set:
                assert field in text, (run.id, field)
        if run.plan.precision in LOW_PRECISION:
            for field in LOW_PRECISION_SETTINGS:
                assert field in text, (run.id, field)
        if run.plan.tp > 1:
            assert "tp_comm_overlap" in text, run.id
            if not run.plan.tp_comm_overlap:  # what the backward's collectives do without the overlap
                assert "tp_async_grad" in text, run.id
        for field in ("network_busbw_gbytes_per_s", "nvlink_busbw_gbytes_per_s"):
            if getattr(run.cluster, field) is not None:
                assert field in text, (run.id, field)
        gpu = resolve_gpu(run.cluster.gpu)
        if gpu.power_limit_watts is not None:  # the power-cap law is a model, not a measurement
            assert any(e.startswith("gpu") and "power" in e for e in run.assumed), run.id


def test_memory_fit_recovers_a_known_allocator_slack():
    """Round trip on synthetic peaks: rows whose 'measured' peak is the model's own prediction with
    12% slack must fit back to 12% (fit_memory's grid has 0.25% steps)."""
    from dataclasses import replace

    from costmodel.types import Efficiency
    from planner.validation import fit

    truth = replace(Efficiency(), memory_fragmentation_fraction=0.12)
    rows = [r for r in validation.load_runs() if r.measured.peak_memory_gib is not None]
    synthetic = [r.model_copy(update={"measured": r.measured.model_copy(
        update={"peak_memory_gib": validation.predict(r, truth).predicted_memory_gib})}) for r in rows]
    fitted, mape = fit.fit_memory(synthetic, Efficiency())
    assert fitted.memory_fragmentation_fraction == pytest.approx(0.12, abs=0.0025)
    assert mape < 0.003


def test_parallel_fits_reach_what_fit_reaches(runs):
    """fit_many (the processes of --leave-one-source-out and --fit-on) gives each set of rows the
    constants fit + fit_memory give it, with any number of workers."""
    from planner.validation import fit

    sets = [[r for r in runs if r.group in ("mlperf", "bloom")], [r for r in runs if r.group == "torchtitan"][:3]]
    expected = []
    for rows in sets:
        eff, mape = fit.fit(rows, rounds=2)
        eff, memory = fit.fit_memory(rows, eff)
        expected.append((eff, mape, memory))
    assert fit.fit_many(sets, workers=2, rounds=2) == expected
    assert fit.fit_many(sets, workers=1, rounds=2) == expected


def test_fit_bounds_are_an_argument_not_a_global(runs):
    """fit_many's `bounds` (benchmarks/fit_noise.py nudges them) default to FIT_BOUNDS, leave the
    table as it was, and must name the same constants with low <= high."""
    from planner.validation import fit

    rows = [r for r in runs if r.group == "mlperf"]
    shipped = dict(fit.FIT_BOUNDS)
    assert fit.fit_many([rows], workers=1, rounds=1, bounds=dict(shipped)) == fit.fit_many([rows], workers=1, rounds=1)
    nudged = {name: (low, high * 1.01) for name, (low, high) in shipped.items()}
    fit.fit_many([rows], workers=1, rounds=1, bounds=nudged)
    assert fit.FIT_BOUNDS == shipped
    with pytest.raises(ValueError, match="must name"):
        fit.fit_many([rows], workers=1, bounds={k: v for k, v in shipped.items() if k != "hbm_efficiency"})
    with pytest.raises(ValueError, match="low above high"):
        fit.fit_many([rows], workers=1, bounds={**shipped, "hbm_efficiency": (0.9, 0.5)})


def test_shipped_constants_are_what_the_fit_reaches(out_of_sample):
    """costmodel.types.Efficiency's FITTED defaults are the output of `planner validate --fit-on
    all` (from the unfitted priors), so anyone can reproduce them; --leave-one-source-out's
    in-sample fit is that same fit."""
    from costmodel.types import Efficiency

    fitted = out_of_sample["in_sample"]["fitted"]
    shipped = Efficiency()
    for name, value in fitted.items():
        assert getattr(shipped, name) == pytest.approx(value, rel=0.005, abs=1e-9), name


# Issue 14: every layout in runs.yaml that was actually run should be predicted to fit. This one is
# not (the shipped constants; it ran on 80 GiB H100s). The set is exact: a row that starts or stops
# fitting fails here, and one that is fixed leaves the set (lower it, never add to it quietly).
# The 530B ZeRO-3 row on 640 A100 (88.4 GiB) left it on 2026-12-01, when DeepSpeed-2021's per-tensor
# gathers were held as one weight tensor and its flat buffer, not two layers, beside the gradient bucket
# its all-reduce flattens (75.2 -> 77.2 GiB; Narayanan et al.'s footnote puts the run between 78.1 and
# 80 GiB: it did not fit on 560 GPUs, 1.9 GiB more of optimizer shard, where the model now says 79.0).
# Two more left it later that day, when the allocator slack became a fraction of the bytes a step
# allocates and frees (step.step_allocated_bytes) instead of all bytes, refit 0.06 -> 0.0775: NeMo's
# GPT-3 20B (80.6 -> 77.3 GiB: 37.4 of kept 16-bit weights with cached fp8 copies) and Megatron-Bridge
# 25.09's token-drop Qwen3-30B-A3B on H100 (80.5 -> 79.4 GiB: 21.3 GiB of expert optimizer states kept
# unsharded at expert-DP 1).
PREDICTED_OVER_CAPACITY = {
    # 86.2 GiB: 63 of model states over dp 2 (fp32 Adam sharded over two ranks). The launcher's configs with
    # the table's layout use Megatron-core's optimizer (fp32 states); the earlier ones, with another layout,
    # Apex's in bf16 (about 65 GiB). The table prints neither (the row's notes cite both).
    "nemo-24.07-nemotron-340b-128gpu",
}


def over_capacity(rows) -> dict[str, float]:
    """The scored rows the shipped constants predict not to fit, with their GiB."""
    from costmodel import types as cm
    from costmodel.step import estimate

    over = {}
    for run in rows:
        if run.exclude:
            continue
        p = validation.prepare(run)
        e = estimate(p.model, p.cluster, p.plan, cm.Efficiency())
        if not e.fits:
            over[run.id] = round(e.memory_per_gpu_bytes / 2**30, 1)
    return over


def test_published_runs_are_predicted_to_fit(scored):
    over = over_capacity(scored)
    print(f"predicted over capacity although run: {over}")
    assert set(over) == PREDICTED_OVER_CAPACITY


# The same for the held-out rows (issues 14 and 15: no published run predicted not to fit), exact in the same way.
# The Megatron-core MoE report's DeepSeek-V3 MXFP8 run on 256 GB200 left it in the thirty-eighth session, when the
# optimizer-state offload its launch line sets became a plan setting (193.4 -> 175.7 GiB of 186).
HELD_OUT_PREDICTED_OVER_CAPACITY = {
    # 95.8 and 88.6 GiB of 80: Meta's 405B at 8k tokens, TP 8 x PP 16 with 32 and 16 micro-batches of one sequence
    # under Meta's own stack, whose memory practices (recompute, buffers) the paper does not give (Table 4)
    "llama3-405b-8192gpu-8k", "llama3-405b-16384gpu-8k",
    # 223.4 GiB of 186: the report's BF16 run prints no optimizer-state offload (its MXFP8 run's launch line sets it);
    # its fp32 Adam states are 32.2 GiB a GPU, which the offload would take off
    "mcore-moe-report-deepseek-v3-gb200-bf16-256gpu",
    # 82.2 GiB of 80 (forty-sixth session): the DGX Cloud recipe's DeepSeek-V3 on 512 H100, TP 2 x PP 8 x EP 64, whose
    # first stage holds 8 micro-batches of 7 layers with only the MLA up-projections recomputed (activations 47.0
    # GiB) and fp32 main gradients; 2.7% over, inside the memory model's largest error on the rows that print a peak
    # (7.3%); the 1,024-GPU run (PP 16) is predicted at 71.0 GiB
    "dgxc-25.05-deepseek-v3-h100-512gpu-bf16",
}


def test_held_out_runs_are_predicted_to_fit(holdout):
    over = over_capacity(holdout)
    print(f"held out, predicted over capacity although run: {over}")
    assert set(over) == HELD_OUT_PREDICTED_OVER_CAPACITY


# Issue 14: fit on the Hopper rows alone, judged on the Blackwell rows, at most 10%, and the reverse. Reached
# 2026-12-04: Hopper -> Blackwell 8.92% (65 rows fitted, 124 judged; 8.8 s), Blackwell -> Hopper 9.15% (124
# fitted, 65 judged; 20 s on 2 cores); with GB300's GEMM rate 8.39% and 8.80%; with the measured collective share
# 8.24% and 8.55%; with the expert-parallel exchanges waiting for SMs 8.00% and 8.37%. Ratchet: never raised until
# RAISED once, with Transformer Engine's casts (thirty-second session): Hopper -> Blackwell 8.00% -> 8.30% (a Hopper
# fit, whose delayed and current-scaling rows now cast less, predicts the Blackwell rows faster), Blackwell -> Hopper
# 8.37% -> 8.08%.
# With B300's attention derived from GB300's (thirty-third session): 8.31% and 8.01%.
# With the fill and drain hops, per-layer CUDA graphs and the fit's fifth start (fifty-fourth session): 7.93% and
# 7.53%.
CROSS_GENERATION_STEP_MAPE_BOUNDS = {("hopper", "blackwell"): 0.0794, ("blackwell", "hopper"): 0.0754}


@pytest.mark.parametrize("fitted, judged", sorted(CROSS_GENERATION_STEP_MAPE_BOUNDS))
def test_one_generation_fitted_predicts_the_other(runs, scored, fitted, judged):
    """`planner validate --fit-on GENERATION`: the constants fitted on one generation's rows alone predict
    every scored row of the other within the bound (issue 14's goal is 10%)."""
    from planner.validation import generalise

    out = generalise.generalisation(runs, fitted)
    by_generation = out["held_out"]["by_generation"]
    assert judged in by_generation and fitted not in by_generation
    step = by_generation[judged]["step_time"]
    assert step["n"] == len([r for r in scored if validation.generation_of(r) == judged])
    assert step["mape"] <= CROSS_GENERATION_STEP_MAPE_BOUNDS[(fitted, judged)] <= 0.10


def test_fit_on_counts_the_rows_it_fits(runs, monkeypatch):
    """--fit-on's train_rows are the rows the fit reads: scored rows of that generation, not the excluded
    ones kept for reference (the audit saw 251 for `all` against 234 scored)."""
    from costmodel.types import Efficiency
    from planner.validation import generalise

    fitted_on = []
    monkeypatch.setattr(generalise.fit, "fit_many",
                        lambda sets, workers=None: fitted_on.extend(sets) or [(Efficiency(), 0.0, None)])
    scored_n = validation.summarise_by_generation(validation.evaluate(runs))["blackwell"]["step_time"]["n"]
    out = generalise.generalisation(runs, "blackwell", workers=1)
    assert out["train_rows"] == len(fitted_on[0]) == scored_n
    assert not any(r.exclude for r in fitted_on[0])


def test_fit_on_reports_the_rows_mape_beside_the_objective(runs, monkeypatch):
    """--fit-on's train_mape is the rows' step MAPE (each row weighs the same, as in every other
    figure validate prints); what the fit minimised, the mean over sources, is train_objective. They
    differ: on all rows at the shipped constants the sources' mean was printed as "step MAPE 5.6%"
    where the rows' MAPE is 7.2%."""
    from costmodel.types import Efficiency
    from planner.validation import generalise

    monkeypatch.setattr(generalise.fit, "fit_many", lambda sets, workers=None: [(Efficiency(), 0.5, None)])
    out = generalise.generalisation(runs, "all", workers=1)
    errors = [abs(r.step_error) for r in validation.evaluate(runs)]
    by_group: dict[str, list[float]] = {}
    for r in validation.evaluate(runs):
        by_group.setdefault(r.run.group, []).append(abs(r.step_error))
    source_mean = sum(sum(g) / len(g) for g in by_group.values()) / len(by_group)
    assert out["train_mape"] == pytest.approx(sum(errors) / len(errors))
    assert out["train_objective"] == 0.5
    assert abs(out["train_mape"] - source_mean) > 0.005  # the two definitions are not the same figure
