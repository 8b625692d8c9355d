"""What planner accepts from outside, as named limits and strict field types.

Every number a user types is checked here before the cost model sees it: counts are integers
(a YAML `true` is not a count, nor is 8.0), quantities are finite numbers, and each is bounded by
what any real training job or machine could have, with room to spare. The bounds keep the search
finite (factoring a GPU count, listing micro-batch sizes) and every result representable in
strict JSON. README.md lists them. Standard library only: the command line reads these before
anything heavy is imported; the pydantic field types built on them are in fields.py.
"""
from __future__ import annotations

# Files: read at most this much, nested at most this deep (before parsing).
MAX_FILE_BYTES = 16 * 2**20
MAX_NESTING = 64
MAX_CSV_FIELD_CHARS = 1 << 16

# Model shapes
MAX_LAYERS = 4096
MAX_HIDDEN = 1 << 18
MAX_HEADS = 1 << 14
MAX_VOCAB = 1 << 24
MAX_SEQ_LENGTH = 1 << 24
MAX_EXPERTS = 1 << 14  # routed experts per MoE layer (DeepSeek-V3, Kimi K2: 256-384)
MAX_MTP_LAYERS = 64
MAX_CAPACITY_FACTOR = 1024.0
MAX_ROUTER_SCALE = 1024.0  # routed_scaling_factor (DeepSeek-V2: 16, V3: 2.5)
MAX_AUX_LOSS_COEFF = 100.0  # a load-balancing loss coefficient (Mixtral 0.001-0.02, gpt-oss 0.9)
# Jobs and machines
MAX_GPUS = 1 << 20
MAX_GPUS_PER_NODE = 1 << 10
MAX_BATCH = 1 << 24  # sequences per global batch
MAX_DEGREE = MAX_GPUS
# A gradient reduce bucket (Plan.grad_bucket_elements): 1e11 elements is 200 GB in 16-bit, over any GPU.
MAX_GRAD_BUCKET_ELEMENTS = 10**11
MAX_TOKENS = 1e17
MAX_MEMORY_GIB = 4096.0
MAX_TFLOPS = 1e5  # dense peak per GPU, any precision
MAX_HBM_GBYTES_PER_S = 1e5
MAX_NVLINK_GBYTES_PER_S = 1e4  # per GPU, one direction
MAX_NETWORK_GBITS_PER_S = 1e5  # per GPU
MAX_LATENCY_US = 1e6
MAX_WATTS = 1e5
MAX_USD_PER_GPU_HOUR = 1e3
MAX_USD = 1e13
MAX_DAYS = 36500.0
# The share of GPU memory a plan may fill by default: suggest's --max-memory-fraction, and what estimate's levers
# must fit in (the cost model already adds its fixed overhead; the rest is headroom for the allocator).
MEMORY_FRACTION = 0.9
# Two figures closer than this share are not told apart: a lever is shown when it saves at least this much per
# sample (analysis/diagnose.py), and compare calls two plans this close equal (analysis/compare.py).
MIN_GAIN = 0.01
# The lowest power cap over rated board power NVIDIA documents a GPU accepting: below it the cube-root clock law
# (costmodel/compute.py power_capped_clock_fraction) would price a limit no GPU takes. A cluster file's
# power_limit_watts and --what-if power both keep to it.
MIN_POWER_FRACTION = 0.2
MIN_POWER_FRACTION_SOURCE = ("the lowest cap NVIDIA documents a GPU accepting: 200 of 1000 W, DGX B200 User Guide, "
                             "Managing Power Capping")
# planner size's run assumptions and scan
MAX_FAILURES_PER_1000_GPU_DAYS = 1000.0
MAX_RESTART_MINUTES = MAX_DAYS * 1440
MAX_CHECKPOINT_GBYTES_PER_S = 1e4  # per node
MAX_SCAN_WORKERS = 64
MAX_SECONDS = 1e9
MAX_EFFICIENCY_SCALE = 2.0  # a measured matmul efficiency scale; above this GEMMs beat the peak
# A measured bus bandwidth over the link's nominal rate: in-network reduction (NVLink SHARP, InfiniBand
# SHARP) lets an all-reduce pass the nominal rate, but not by this much; above it the measurement is of
# other links (another fabric, more GPUs per node).
MAX_BUSBW_OVER_NOMINAL = 2.0
# A calibration row the fitted alpha-beta ring misses by more than this: nccl-tests' large messages follow
# t = latency steps + bytes / busbw to within a few percent (the shipped examples within 0.3%), so a miss this
# size is a failed or disturbed measurement, or logs of other links, and the fitted figures carry it.
MAX_CALIBRATION_ROW_ERROR = 0.2
MAX_NAME_CHARS = 128
# Lower bounds: smaller values describe no machine or job (and would overflow a step time).
MIN_MEMORY_GIB = 0.25
MIN_TFLOPS = 0.01
MIN_HBM_GBYTES_PER_S = 1.0
MIN_LINK_GBYTES_PER_S = 0.01  # NVLink or a measured bus bandwidth
MIN_NETWORK_GBITS_PER_S = 0.1
MIN_WATTS = 10.0
MIN_EFFICIENCY_SCALE = 0.01
MIN_TOKENS = 1.0
MIN_SECONDS = 1e-6
MIN_USD_PER_GPU_HOUR = 1e-4
MIN_DAYS = 1e-3  # a deadline of 86 s: shorter ones are typos, and overflow the GPU counts they imply
MIN_USD = 0.01  # a budget of one cent
MIN_CHECKPOINT_GBYTES_PER_S = 1e-3  # per node

# The fastest shipped parts (2026): a value above these is legal but draws a warning, since it most
# likely is a per-node figure typed where a per-GPU one belongs, or bits for bytes.
# NIC per GPU: NVIDIA ConnectX-8 SuperNIC, 800 Gb/s (GB300 NVL72 / HGX B300 spec sheets).
# NVLink 5 per GPU: 1.8 TB/s bidirectional = 900 GB/s per direction (NVIDIA Blackwell datasheet).
# HBM: B300 / GB300 8 TB/s; memory: 288 GB of HBM3e per B300/GB300 package (270 GB / 279 GB usable per NVIDIA's specs).
PLAUSIBLE = {
    "network_bandwidth_gbits_per_s": (1600.0, "above twice the fastest shipped NIC per GPU (800 Gb/s); "
                                              "is it the node's total? the key is per GPU"),
    "nvlink_bandwidth_gbytes_per_s": (1800.0, "above twice NVLink 5's 900 GB/s per GPU and direction; the key is "
                                              "per GPU, one direction"),
    "hbm_bandwidth_gbytes_per_s": (16000.0, "above twice the fastest shipped HBM (8 TB/s per GPU)"),
    "memory_gib": (600.0, "above twice the largest shipped GPU memory (288 GB)"),
}
