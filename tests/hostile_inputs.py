"""Malformed and hostile inputs for every way into planner, as cases for tests/test_hostile_inputs.py.

Each `Case` is (kind, description, setup, valid, either): `setup(folder)` writes whatever files the case
needs into `folder` (which is also the working directory the case runs in) and returns the
`Invocation` (argv for `planner.commands.main.main`, environment variables, stdin bytes). Malformed
cases must end with exit code 2 and one `planner: error:` line; the few `valid=True` controls
must exit 0, and the handful of `either=True` extremes (inside every documented limit) may exit 0 or 2. Every malformed case has exactly one defect on top of a base input that a control
case shows to be valid (the tiny model, cluster, HF config, plan JSON, nccl-tests log, step-time
file, prices, offerings, catalog folder and validation runs below), and is something no real
training job, machine or tool output could hold.

`cases()` is deterministic: the same list, in the same order, on every call.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NCCL_EXAMPLE = ROOT / "examples" / "nccl" / "all_reduce_8gpu.txt"
CATALOGS = ROOT / "catalogs"

# A count no real job or machine has. Strings that would run a command in a shell say `touch pwned`,
# and the harness checks that no file `pwned` appears.
HUGE = "1000000000000"
MIB = 2**20


@dataclass(frozen=True)
class Invocation:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes = b""


@dataclass(frozen=True)
class Case:
    """`valid`: a control that must exit 0. `either`: an extreme input inside every documented limit, where
    exit 0 and a one-line error are both right, and only a traceback, a hang, non-strict JSON or a
    multi-line error is wrong. Otherwise the case is malformed and must end in one error line."""

    kind: str
    description: str
    setup: Callable[[Path], Invocation]
    valid: bool = False
    either: bool = False
    timeout_s: float | None = None  # past this the case counts as a hang (None: the harness's TIMEOUT_S)


# Inputs at every documented limit (1,048,576 GPUs, 4,096 layers of width 262,144, 16M-token sequences)
# search spaces of up to ~300,000 layouts, and `size` scans 18 GPU counts of them: bounded work that
# takes up to about a minute on a 2-core machine (benchmarks/bench_suggest.py), not a hang.
EXTREME_TIMEOUT_S = 120.0


# --------------------------------------------------------------------------- placing files

@dataclass(frozen=True)
class Special:
    """A file that is not a regular file of text: a FIFO, a folder, /dev/zero, a missing path, links."""

    what: str


FIFO, FOLDER, DEV_ZERO, MISSING = Special("fifo"), Special("folder"), Special("devzero"), Special("missing")
LOOP, DANGLING = Special("symlink-loop"), Special("dangling-symlink")


@dataclass(frozen=True)
class Big:
    """Over 16 MiB of junk text (each line `line`), so the file is malformed whatever the size limit."""

    line: str = "planner planner planner planner planner planner planner planner\n"


def place(folder: Path, name: str, content) -> str:
    """Put `content` at folder/name; return the path to give on the command line (relative to folder)."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, Big):
        chunk = content.line.encode() * (MIB // len(content.line) + 1)
        with open(path, "wb") as fh:
            fh.writelines([chunk] * 17)
    elif content is FIFO:
        os.mkfifo(path)
    elif content is FOLDER:
        path.mkdir()
    elif content is DEV_ZERO:
        return "/dev/zero"
    elif content is MISSING:
        pass
    elif content is LOOP:
        os.symlink(path.name + ".other", path)
        os.symlink(path.name, path.with_name(path.name + ".other"))
    elif content is DANGLING:
        os.symlink("nowhere-" + path.name, path)
    else:
        raise TypeError(f"cannot place {content!r}")
    return name


# --------------------------------------------------------------------------- YAML and JSON text

def yaml_text(fields: dict, indent: int = 0) -> str:
    """Block YAML from a dict whose leaf values are raw YAML text (so '.nan', '1e400', 'true' stay as
    written); nested dicts become nested mappings."""
    lines = []
    for key, value in fields.items():
        if isinstance(value, dict):
            lines.append(" " * indent + f"{key}:")
            lines.append(yaml_text(value, indent + 2).rstrip("\n"))
        else:
            lines.append(" " * indent + f"{key}: {value}")
    return "\n".join(lines) + "\n"


def yaml_list(rows: list[dict]) -> str:
    """A YAML list of block mappings (raw leaf values)."""
    out = []
    for row in rows:
        body = yaml_text(row, 2).splitlines()
        out.append("- " + body[0][2:])
        out += body[1:]
    return "\n".join(out) + "\n"


def with_value(fields: dict, path: str, raw: str | None) -> dict:
    """A deep copy of `fields` with the dotted `path` set to raw text (None: the key removed)."""
    out = copy.deepcopy(fields)
    *parents, last = path.split(".")
    node = out
    for p in parents:
        node = node[p]
    if raw is None:
        node.pop(last, None)
    else:
        node[last] = raw
    return out


_RAW = "@@RAW@@"


def json_with(obj, path: str, raw: str | None) -> str:
    """JSON text of `obj` with the dotted `path` replaced by raw JSON text (None: removed), so NaN,
    1e400 or 5000-digit numbers can be written exactly."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if raw is None:
        del node[last]
    else:
        if isinstance(node, list):
            node[int(last)] = _RAW
        else:
            node[last] = _RAW
    text = json.dumps(out, indent=1)
    return text if raw is None else text.replace(json.dumps(_RAW), raw)


def deep_flow(opener: str, closer: str, depth: int = 20000) -> str:
    return opener * depth + closer * depth


def billion_laughs() -> str:
    levels = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        levels.append(f"&{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "[" + ", ".join(levels) + "]"


def hostile_files(fmt: str, valid: str, set_number: Callable[[str], str] | None = None,
                  dup: str | None = None, truncate: bool = True) -> list[tuple[str, object]]:
    """(description, content) of files that are malformed whatever they claim to be. `valid` is a good
    file of the kind, `set_number(raw)` the same file with one numeric field written as `raw`, and
    `dup` the file with one key given twice; `truncate` adds the first half of `valid` (only for kinds
    where that half cannot be a complete file, i.e. not lists of independent rows)."""
    out: list[tuple[str, object]] = [
        ("empty file", b""),
        ("whitespace-only file", b"  \n\t\n   \n"),
        ("binary bytes with NULs", bytes(range(256)) * 16),
        ("/dev/zero given as the file", DEV_ZERO),
        ("a FIFO given as the file", FIFO),
        ("a folder given as the file", FOLDER),
        ("no such file", MISSING),
        ("a symlink loop", LOOP),
        ("a dangling symlink", DANGLING),
        ("17 MiB of junk text (over the 16 MiB limit)", Big()),
    ]
    if fmt != "text":  # nccl-tests logs are read leniently (NULs dropped, bad bytes replaced) by design
        out += [
            ("UTF-16 (with BOM) text of a valid file", valid.encode("utf-16")),
            ("UTF-16-BE (no BOM) text of a valid file", valid.encode("utf-16-be")),
            ("a NUL byte inside otherwise valid text", valid[: len(valid) // 2].encode() + b"\x00"
             + valid[len(valid) // 2:].encode()),
            ("Latin-1 bytes (not UTF-8) in a value", valid.replace("tiny", "tin\xff", 1).encode("latin-1")
             if "tiny" in valid else b"\xe9t\xe9 " + valid.encode()),
        ]
    if fmt == "yaml":
        out += [
            ("YAML nested 20,000 deep (flow sequences)", deep_flow("[", "]")),
            ("YAML nested 20,000 deep (flow mappings)", deep_flow("{a: ", "}")),
            ("YAML nested 20,000 deep (block sequences on one line)", "- " * 20000 + "x\n"),
            ("YAML nested 3,000 deep (block mappings, one space per level)",
             "".join(" " * i + "a:\n" for i in range(3000)) + " " * 3000 + "b: 1\n"),
            ("top-level list of numbers", "- 1\n- 2\n- 3\n"),
            ("top-level scalar", "42\n"),
            ("top-level null", "~\n"),
            ("only a document marker", "---\n"),
            ("two YAML documents", valid + "---\n" + valid),
            ("!!python/object/apply tag", "!!python/object/apply:os.system ['touch pwned']\n"),
            ("tab indentation", valid.replace("\n", "\n\t", 1)),
            ("unclosed flow sequence", valid + "extra: [1, 2\n"),
            ("a list used as a key", "? [a, b]\n: 1\n" + valid),
            ("billion-laughs aliases", valid + "laughs: " + billion_laughs() + "\n"),
        ]
        if dup is not None:
            out.append(("a key given twice", dup))
        if set_number is not None:
            out += [
                ("a 5000-digit integer", set_number("9" * 5000)),
                ("a value nested 20,000 deep", set_number(deep_flow("[", "]"))),
            ]
    if fmt == "json":
        out += [
            ("JSON nested 20,000 deep (arrays)", deep_flow("[", "]")),
            ('JSON nested 20,000 deep (objects)', '{"a": ' * 20000 + "1" + "}" * 20000),
            ("top-level JSON list of numbers", "[1, 2, 3]"),
            ("top-level JSON number", "42"),
            ("top-level JSON null", "null"),
            ("top-level JSON string", '"plan"'),
            ("trailing comma", valid.rstrip().rstrip("}") + ",}"),
            ("a // comment", "// plan\n" + valid),
            ("single-quoted strings", valid.replace('"', "'")),
            ("YAML instead of JSON", "name: tiny\nnum_layers: 4\n"),
            ("two JSON documents back to back", valid + valid),
        ]
        if dup is not None:
            out.append(("a key given twice", dup))
        if set_number is not None:
            out += [
                ("NaN literal", set_number("NaN")),
                ("Infinity literal", set_number("Infinity")),
                ("-Infinity literal", set_number("-Infinity")),
                ("a 5000-digit integer", set_number("9" * 5000)),
                ("a value nested 20,000 deep", set_number(deep_flow("[", "]"))),
            ]
    if fmt in ("yaml", "json", "csv") and truncate and len(valid) > 8:
        out.append(("truncated to its first half", valid[: len(valid) // 2]))
    return out


# --------------------------------------------------------------------------- base inputs

TINY_MODEL = {"name": "tiny", "num_layers": "4", "hidden_size": "512", "num_attention_heads": "8",
              "num_kv_heads": "8", "ffn_hidden_size": "2048", "vocab_size": "32000", "seq_length": "1024",
              "mlp": "gelu", "tie_embeddings": "false", "dropout": "false", "global_batch_size": "16",
              "training_tokens": "1.0e9"}
BOX_CLUSTER = {"name": "box", "gpu": "h100-sxm-80gb", "num_gpus": "8", "gpus_per_node": "8",
               "nvlink_domain_size": "8", "network_bandwidth_gbits_per_s": "400", "rdma": "true",
               "usd_per_gpu_hour": "2.5", "price_kind": "on-demand"}
INLINE_GPU = {"name": "testgpu", "vendor": "nvidia", "generation": "hopper", "memory_gib": "80",
              "dense_tflops": {"bf16": "989", "fp16": "989", "fp8": "1979"}, "hbm_bandwidth_gbytes_per_s": "3350",
              "nvlink_bandwidth_gbytes_per_s": "450", "tdp_watts": "700"}
INLINE_CLUSTER = {**BOX_CLUSTER, "name": "box-inline", "gpu": INLINE_GPU}
HF_CONFIG = {"architectures": '["LlamaForCausalLM"]', "model_type": '"llama"', "num_hidden_layers": "4",
             "hidden_size": "512", "num_attention_heads": "8", "num_key_value_heads": "8",
             "intermediate_size": "1376", "vocab_size": "32000", "max_position_embeddings": "1024",
             "hidden_act": '"silu"', "tie_word_embeddings": "false", "attention_dropout": "0.0"}
STEP_COLUMNS = ["name", "model", "gpus", "tp", "pp", "mbs", "gbs", "zero", "step_time_s"]
STEP_ROWS = [["r1", "llama3-8b", "8", "2", "1", "1", "64", "1", "8.2"],
             ["r2", "llama3-8b", "8", "4", "1", "1", "64", "1", "9.9"]]
OFFERING = {"name": "test-h100", "gpu": "h100-sxm-80gb", "gpus_per_node": "8", "nvlink_domain_size": "8",
            "network_bandwidth_gbits_per_s": "400", "rdma": "true", "usd_per_gpu_hour": "2.5",
            "price_kind": "on-demand", "price_date": "'2026-05'"}
RUN = {"id": "test-run", "source": "hand-written test row", "group": "megatron-2021",
       "model": {"name": "megatron-gpt-1.7b", "num_layers": "24", "hidden_size": "2304", "num_attention_heads": "24",
                 "vocab_size": "51200", "seq_length": "2048", "mlp": "gelu", "tie_embeddings": "true",
                 "dropout": "true"},
       "cluster": {"name": "selene-dgx-a100", "gpu": "a100-sxm-80gb", "num_gpus": "32", "gpus_per_node": "8",
                   "nvlink_domain_size": "8", "network_bandwidth_gbits_per_s": "200", "rdma": "true"},
       "plan": {"tp": "1", "pp": "1", "dp": "32", "micro_batch_size": "16", "global_batch_size": "512",
                "zero_stage": "0", "recompute": "full"},
       "measured": {"step_time_s": "3.53", "step_time_kind": "measured"}}


def hf_json(fields: dict) -> str:
    """JSON object text from raw JSON values (so NaN, 1e400 stay as written)."""
    return "{\n" + ",\n".join(f'  "{k}": {v}' for k, v in fields.items()) + "\n}\n"


def csv_text(columns: list[str], rows: list[list[str]]) -> str:
    return "\n".join(",".join(r) for r in [columns, *rows]) + "\n"


def nccl_parts() -> tuple[list[str], list[str], list[str]]:
    """The example all_reduce log split into (header lines up to the units line, data rows, footer)."""
    lines = NCCL_EXAMPLE.read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.strip() and ln.split()[0].isdigit())
    last = max(i for i, ln in enumerate(lines) if ln.strip() and ln.split()[0].isdigit())
    return lines[:first], lines[first:last + 1], lines[last + 1:]


def nccl_log(rows: list[str] | None = None, head: list[str] | None = None, tail: list[str] | None = None) -> str:
    h, r, t = nccl_parts()
    return "\n".join((h if head is None else head) + (r if rows is None else rows) + (t if tail is None else tail)) + "\n"


def nccl_rows_with(fn: Callable[[list[str]], list[str]]) -> list[str]:
    """The example's data rows, each tokenised, changed by `fn` and joined again."""
    return ["  ".join(fn(row.split())) for row in nccl_parts()[1]]


# Columns of the example's data rows: size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
T_OOP, T_IP, BW = 5, 9, (6, 7, 10, 11)


def nccl_json_doc() -> dict:
    """An nccl-tests -J (JSON_FILE_VERSION 3) document with the example's rows."""
    def section(tok: list[str], o: int) -> dict:
        return {"time": float(tok[o]), "alg_bw": float(tok[o + 1]), "bus_bw": float(tok[o + 2]), "nwrong": 0}

    results = []
    for row in nccl_parts()[1]:
        tok = row.split()
        results.append({"size": int(tok[0]), "count": int(tok[1]), "type": "float", "redop": "sum", "root": -1,
                        "out_of_place": section(tok, T_OOP), "in_place": section(tok, T_IP)})
    return {"version": 3, "args": ["./build/all_reduce_perf", "-b", "128M", "-e", "8G", "-f", "2", "-g", "8"],
            "config": {"devices": [{"rank": i, "hostname": "node-01", "device": i} for i in range(8)]},
            "results": results, "average_bus_bandwidth": {"bandwidth": 324.326}}


_SCORED: dict[tuple, dict] = {}


def scored(*argv: str) -> dict:
    """The estimate object `planner estimate ... --json` prints (computed once per process)."""
    if argv not in _SCORED:
        from planner.commands.main import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["estimate", *argv, "--json"])
        if code != 0:
            raise RuntimeError(f"base estimate {argv} failed: {err.getvalue().strip()}")
        _SCORED[argv] = json.loads(out.getvalue())
    return copy.deepcopy(_SCORED[argv])


PLAN_A = ("llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "2", "--gbs", "64", "--zero", "1")
PLAN_B = ("llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "4", "--gbs", "64", "--zero", "1")


def copy_catalogs(folder: Path) -> Path:
    """A copy of the shipped catalogs (gpus.yaml, clusters.yaml, models/) under folder/cat."""
    dest = folder / "cat"
    (dest / "models").mkdir(parents=True)
    for name in ("gpus.yaml", "clusters.yaml"):
        shutil.copyfile(CATALOGS / name, dest / name)
    for p in sorted((CATALOGS / "models").glob("*.yaml")):
        shutil.copyfile(p, dest / "models" / p.name)
    return dest


# --------------------------------------------------------------------------- commands over the bases

ESTIMATE_8 = ["--gpus", "8", "--json"]
SUGGEST_BASE = ["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--top", "2", "--json"]
SIZE_BASE = ["size", "llama3-8b", "--tokens", "1e10", "--gbs", "64", "--max-gpus", "16",
             "--gpu-types", "h100-sxm-80gb", "--workers", "1", "--json"]
ESTIMATE_BASE = ["estimate", *PLAN_A, "--json"]


def replace_flag(argv: list[str], flag: str, value: str | None) -> list[str]:
    """argv with `flag`'s value replaced (value None: flag and value removed); appended if absent."""
    out = list(argv)
    if flag in out:
        i = out.index(flag)
        del out[i:i + 2]
    if value is not None:
        out.append(f"{flag}={value}")
    return out


# --------------------------------------------------------------------------- the cases

def _argv(kind: str, desc: str, argv: list[str], valid: bool = False, stdin: bytes = b"",
          before: Callable[[Path], None] | None = None) -> Case:
    def setup(folder: Path) -> Invocation:
        if before:
            before(folder)
        return Invocation(list(argv), {}, stdin)
    return Case(kind, desc, setup, valid)


def write_tiny(folder: Path) -> None:
    place(folder, "m.yaml", yaml_text(TINY_MODEL))


def write_plans(folder: Path) -> None:
    place(folder, "a.json", json.dumps(scored(*PLAN_A), indent=1))
    place(folder, "b.json", json.dumps(scored(*PLAN_B), indent=1))


NUMBER_NONSENSE = [("true", "true (a boolean)"), ("10000000000000000000", "10000000000000000000"),
                   ("1e400", "1e400 (infinite)"), (".inf", ".inf"), ("-.inf", "-.inf"), (".nan", ".nan"),
                   ("0", "0"), ("-4", "negative"), ("4.5", "a fraction"), ('"4"', "a string"),
                   ("''", "an empty string"), ("null", "null"), ("[4]", "a list"), ("{a: 4}", "a mapping"),
                   (HUGE, HUGE)]


def model_cases() -> Iterator[Case]:
    kind = "model-yaml"

    def use(path: str, folder: Path) -> Invocation:
        return Invocation(["estimate", path, "dgx-h100", *ESTIMATE_8])

    muts: list[tuple[str, str, str | None]] = [("num_layers", raw, f"num_layers: {d}") for raw, d in NUMBER_NONSENSE]
    muts += [("num_layers", "0x7fffffffffffffff", "num_layers: hex 2**63-1")]
    muts += [("hidden_size", raw, f"hidden_size: {d}") for raw, d in
             [("0", "0"), ("-512", "negative"), (".nan", ".nan"), ("1e400", "1e400"), ("true", "true"),
              ('"512"', "a string"), ("1099511627776", "2**40"), ("500", "500 (not divisible by 8 heads)"),
              ("[512]", "a list"), ("512.5", "a fraction")]]
    muts += [("num_attention_heads", raw, f"num_attention_heads: {d}") for raw, d in
             [("0", "0"), ("-8", "negative"), (".nan", ".nan"), ("7", "7 (does not divide hidden 512)"),
              ("1e18", "1e18"), ("true", "true")]]
    muts += [("num_kv_heads", raw, f"num_kv_heads: {d}") for raw, d in
             [("3", "3 (does not divide 8 heads)"), ("0", "0"), ("-1", "negative"), ("16", "16 (more than heads)"),
              (".inf", ".inf"), ('"8"', "a string")]]
    muts += [("vocab_size", raw, f"vocab_size: {d}") for raw, d in
             [("0", "0"), ("-1", "negative"), ("1e400", "1e400"), ("100000000000000000000", "1e20"),
              ('"32k"', "a string"), (".nan", ".nan")]]
    muts += [("seq_length", raw, f"seq_length: {d}") for raw, d in
             [("0", "0"), ("-1", "negative"), (".inf", ".inf"), (HUGE, HUGE), ("1.5", "a fraction"),
              (".nan", ".nan")]]
    muts += [("ffn_hidden_size", raw, f"ffn_hidden_size: {d}") for raw, d in
             [("0", "0"), ("-1", "negative"), (".nan", ".nan"), ("1000000000000000", "1e15"), ("1e400", "1e400")]]
    muts += [("mlp", raw, f"mlp: {d}") for raw, d in
             [("relu", "relu"), ("1", "a number"), ("null", "null"), ("[gelu, swiglu]", "a list")]]
    muts += [("tie_embeddings", raw, f"tie_embeddings: {d}") for raw, d in
             [("maybe", "maybe"), ("2", "2"), (".nan", ".nan")]]
    muts += [("dropout", raw, f"dropout: {d}") for raw, d in [("0.1", "0.1"), ('"no way"', "a sentence")]]
    muts += [("global_batch_size", raw, f"global_batch_size: {d}") for raw, d in
             [("0", "0"), ("-16", "negative"), (".nan", ".nan"), ("10000000000000000000", "1e19"),
              ("1e18", "1e18"), ("16.5", "a fraction")]]
    muts += [("training_tokens", raw, f"training_tokens: {d}") for raw, d in
             [(".nan", ".nan"), (".inf", ".inf"), ("-1", "negative"), ("0", "0"), ("1e400", "1e400"),
              ('"2T"', "a string"), ("1e30", "1e30"), ("true", "true"), ("1e-300", "1e-300 (under one token)")]]
    muts += [("name", raw, f"name: {d}") for raw, d in
             [('"tiny\\nevil"', "holding a newline"), ('"$(touch pwned)"', "holding $(...)"),
              ('"`touch pwned`"', "holding backticks"), ('"ti\\"ny\'s"', "holding quotes"), ("''", "empty"),
              ('"\\e[2J"', "an ANSI escape"), ("x" * 300, "300 characters"), ("123", "a number"),
              ("[a, b]", "a list"), ("null", "null"), ("true", "true"), ('"tiny\\0"', "holding a NUL"),
              ('"tiny\\r"', "holding a carriage return")]]
    muts += [("num_layer", "4", "unknown key num_layer"), ("hidden_sise", "512", "unknown key hidden_sise"),
             ("moe_experts", "8", "unknown key moe_experts"), ("extra", "{a: 1}", "unknown nested key"),
             ("num_layers", None, "num_layers missing"), ("name", None, "name missing"),
             ("vocab_size", None, "vocab_size missing"), ("source", "[1, 2]", "source: a list"),
             ("normalization", "batchnorm", "normalization batchnorm"),
             ("position_embedding", "[rope]", "position_embedding a list"),
             ("linear_bias", "maybe", "linear_bias maybe"), ("qkv_bias", "2", "qkv_bias 2")]
    rope = {**TINY_MODEL, "position_embedding": "rope", "rope_theta": "10000"}
    muts_rope = [("rope_theta", raw, f"rope_theta {d}") for raw, d in
                 [(".nan", ".nan"), ("-1", "negative"), ("1e400", "1e400"), ("0", "0"), ('"1e4"', "a string")]]
    muts_rope += [("rotary_percent", raw, f"rotary_percent {d}") for raw, d in
                  [("0", "0"), ("1.5", "1.5 (over 1)"), (".nan", ".nan"), ("-0.5", "negative")]]
    for key, raw, desc in muts_rope:
        text = yaml_text(with_value(rope, key, raw))
        yield Case(kind, f"rope model: {desc}", lambda f, t=text: use(place(f, "m.yaml", t), f))
    for key, raw, desc in muts:
        text = yaml_text(with_value(TINY_MODEL, key, raw))
        yield Case(kind, desc, lambda f, t=text: use(place(f, "m.yaml", t), f))
    valid = yaml_text(TINY_MODEL)
    for desc, content in hostile_files("yaml", valid, lambda raw: yaml_text(with_value(TINY_MODEL, "num_layers", raw)),
                                       dup=valid + "num_layers: 8\n"):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "m.yaml", c), f))
    yield Case(kind, "path holding a newline (no such file)",
               lambda f: use(place(f, "tiny\nevil.yaml", MISSING), f))


def cluster_cases() -> Iterator[Case]:
    kind = "cluster-yaml"

    def use(path: str, folder: Path) -> Invocation:
        write_tiny(folder)
        return Invocation(["estimate", "m.yaml", path, "--json"])

    def one(desc: str, fields: dict, command: str = "estimate") -> Case:
        text = yaml_text(fields)

        def setup(f: Path) -> Invocation:
            write_tiny(f)
            path = place(f, "c.yaml", text)
            if command == "suggest":
                return Invocation(["suggest", "m.yaml", path, "--top", "1", "--json"])
            if command == "calibrate":
                return Invocation(["calibrate", path, "--nccl", str(NCCL_EXAMPLE), "--json"])
            return Invocation(["estimate", "m.yaml", path, "--json"])
        return Case(kind, desc, setup)

    muts: list[tuple[str, str | None, str]] = []
    muts += [("network_bandwidth_gbits_per_s", raw, f"network bandwidth {d}") for raw, d in
             [(".inf", ".inf"), (".nan", ".nan"), ("0", "0"), ("-400", "negative"), ("1e400", "1e400"),
              ('"400G"', "a string"), ("true", "true"), ("null", "null"), ("1e30", "1e30 Gb/s")]]
    muts += [("gpus_per_node", raw, f"gpus_per_node {d}") for raw, d in
             [("0", "0"), ("-8", "negative"), ("1e400", "1e400"), ("true", "true"), ("10000000000000", "1e13"),
              ("3.5", "a fraction")]]
    muts += [("nvlink_domain_size", raw, f"nvlink_domain_size {d}") for raw, d in
             [("0", "0"), ("-1", "negative"), (HUGE, HUGE), (".nan", ".nan")]]
    muts += [("nvlink_bandwidth_gbytes_per_s", raw, f"nvlink_bandwidth_gbytes_per_s {d}") for raw, d in
             [("0", "0 with nvlink_domain_size 8"), (".nan", ".nan"), ("-1", "negative"), (".inf", ".inf")]]
    muts += [("num_gpus", raw, f"num_gpus {d}") for raw, d in
             [("0", "0"), ("-64", "negative"), (HUGE, HUGE), (".nan", ".nan"), ("true", "true")]]
    muts += [("usd_per_gpu_hour", raw, f"usd_per_gpu_hour {d}") for raw, d in
             [(".inf", ".inf"), (".nan", ".nan"), ("-1", "negative"), ("1e400", "1e400"), ('"2.99$"', "a string"),
              ("1e30", "1e30")]]
    muts += [("price_kind", '"free"', "price_kind free"), ("rdma", "maybe", "rdma maybe"), ("rdma", "1", "rdma 1"),
             ("rdma", ".nan", "rdma .nan")]
    muts += [("matmul_efficiency_scale", raw, f"matmul_efficiency_scale {d}") for raw, d in
             [("1e6", "1e6"), ("0", "0"), ("-1", "negative"), (".nan", ".nan"), (".inf", ".inf"),
              ("3", "3 (GEMMs beyond peak)")]]
    muts += [("nvlink_busbw_gbytes_per_s", raw, f"nvlink_busbw_gbytes_per_s {d}") for raw, d in
             [(".nan", ".nan"), ("0", "0"), ("-1", "negative"), ("1e300", "1e300")]]
    muts += [("network_busbw_gbytes_per_s", ".inf", "network_busbw_gbytes_per_s .inf"),
             ("network_busbw_gbytes_per_s", "0", "network_busbw_gbytes_per_s 0"),
             ("nvlink_latency_us", "-1", "nvlink_latency_us negative"),
             ("nvlink_latency_us", ".nan", "nvlink_latency_us .nan"),
             ("network_latency_us", ".inf", "network_latency_us .inf"),
             ("network_latency_us", "-5", "network_latency_us negative")]
    muts += [("gpu", raw, f"gpu {d}") for raw, d in
             [('"h100"', "unknown name h100"), ("''", "empty"), ("123", "a number"), ("null", "null"),
              ("[h100-sxm-80gb]", "a list"), ('"h100-sxm-80gb\\n"', "name with a trailing newline"),
              ('"$(touch pwned)"', "holding $(...)")]]
    muts += [("calibrated_from", "{}", "calibrated_from without a date"),
             ("calibrated_from", "{date: 2024-01-01, min_message_bytes: -1}", "calibrated_from min_message_bytes -1"),
             ("calibrated_from", "{date: x, nccl_logs: notalist}", "calibrated_from nccl_logs not a list"),
             ("calibrated_from", "{date: x, bogus: 1}", "calibrated_from unknown key")]
    muts += [("nvlink_bandwith_gbytes_per_s", "450", "unknown key (typo nvlink_bandwith)"),
             ("num_nodes", "8", "unknown key num_nodes")]
    muts += [("name", raw, f"name {d}") for raw, d in
             [('"box\\nevil"', "holding a newline"), ('"$(touch pwned)"', "holding $(...)"),
              ('"`touch pwned`"', "holding backticks"), ('"b\\"o\'x"', "holding quotes"), ("''", "empty")]]
    muts += [("network_bandwidth_gbits_per_s", None, "network bandwidth missing"), ("gpu", None, "gpu missing"),
             ("name", None, "name missing")]
    for key, raw, desc in muts:
        fields = with_value(BOX_CLUSTER, key, raw)
        if desc == "nvlink_bandwidth_gbytes_per_s 0 with nvlink_domain_size 8":
            fields["nvlink_domain_size"] = "8"
        yield one(desc, fields)

    gpu_muts: list[tuple[str, str | None, str]] = []
    gpu_muts += [("memory_gib", raw, f"memory_gib {d}") for raw, d in
                 [(".inf", ".inf"), (".nan", ".nan"), ("0", "0"), ("-80", "negative"), ("1e400", "1e400"),
                  ("100000", "100000 GiB")]]
    gpu_muts += [("dense_tflops", raw, f"dense_tflops {d}") for raw, d in
                 [("{bf16: .nan}", "bf16 .nan"), ("{bf16: -1}", "bf16 negative"), ("{}", "empty"),
                  ("{bf16: 989, fp64: 60}", "unknown precision fp64"), ("{bf16: fast}", "bf16 a string"),
                  ("[989]", "a list"), ("989", "a number"), ("{bf16: 1e400}", "bf16 1e400"),
                  ("{bf16: 1e9}", "bf16 1e9 TFLOP/s"), ("{fp8: 1979}", "no bf16 or fp16 entry"),
                  ("{bf16: .inf, fp8: 1979}", "bf16 .inf")]]
    gpu_muts += [("hbm_bandwidth_gbytes_per_s", raw, f"hbm bandwidth {d}") for raw, d in
                 [(".nan", ".nan"), ("0", "0"), ("-1", "negative"), (".inf", ".inf")]]
    gpu_muts += [("nvlink_bandwidth_gbytes_per_s", ".nan", "gpu nvlink .nan"),
                 ("nvlink_bandwidth_gbytes_per_s", "-1", "gpu nvlink negative"),
                 ("generation", '"pascal"', "generation pascal"), ("generation", "null", "generation null"),
                 ("vendor", '"acme"', "vendor acme"), ("tdp_watts", ".nan", "tdp_watts .nan"),
                 ("tdp_watts", "-1", "tdp_watts negative"), ("tdp_watts", "0", "tdp_watts 0"),
                 ("power_limit_watts", ".nan", "power_limit_watts .nan"), ("power_limit_watts", "0", "power_limit_watts 0"),
                 ("power_limit_watts", "1e6", "power_limit_watts 1e6"),
                 ("measured_matmul_bf16_tflops", ".nan", "measured matmul .nan"),
                 ("measured_matmul_bf16_tflops", "-5", "measured matmul negative"),
                 ("derived_matmul_fp8_tflops", ".nan", "derived matmul .nan"),
                 ("derived_matmul_fp8_tflops", "-5", "derived matmul negative"),
                 ("derived_attention_bf16_tflops", "{forward: .nan, backward: 900}", "derived attention .nan"),
                 ("derived_attention_bf16_tflops", "{forward: 900}", "derived attention without backward"),
                 ("memory_gb", "80", "unknown key memory_gb"),
                 ("name", '"gpu\\nevil"', "name holding a newline"), ("name", '"$(touch pwned)"', "name holding $(...)"),
                 ("name", "''", "name empty"), ("memory_gib", None, "memory_gib missing"),
                 ("generation", None, "generation missing")]
    for key, raw, desc in gpu_muts:
        yield one(f"inline gpu: {desc}", with_value(INLINE_CLUSTER, f"gpu.{key}", raw))
    no_tdp = with_value(with_value(INLINE_CLUSTER, "gpu.tdp_watts", None), "gpu.power_limit_watts", "500")
    both = with_value(with_value(INLINE_CLUSTER, "gpu.measured_matmul_fp8_tflops", "1400"),
                      "gpu.derived_matmul_fp8_tflops", "1400")
    yield one("inline gpu: a derived matmul rate beside a measured one", both)
    yield one("inline gpu: power_limit_watts without tdp_watts", no_tdp)
    # the same defects reaching a search and a calibration
    for key, raw, desc in [("matmul_efficiency_scale", "1e6", "matmul_efficiency_scale 1e6"),
                           ("nvlink_bandwidth_gbytes_per_s", "0", "nvlink 0 GB/s with domain 8"),
                           ("usd_per_gpu_hour", ".inf", "usd_per_gpu_hour .inf"),
                           ("network_bandwidth_gbits_per_s", ".nan", "network .nan"),
                           ("num_gpus", HUGE, f"num_gpus {HUGE}")]:
        yield one(f"suggest: {desc}", with_value(BOX_CLUSTER, key, raw), "suggest")
    yield one("suggest: inline gpu memory_gib .nan", with_value(INLINE_CLUSTER, "gpu.memory_gib", ".nan"), "suggest")
    for key, raw, desc in [("network_bandwidth_gbits_per_s", ".inf", "network .inf"),
                           ("nvlink_busbw_gbytes_per_s", ".nan", "nvlink_busbw .nan"),
                           ("gpus_per_node", "0", "gpus_per_node 0")]:
        yield one(f"calibrate: {desc}", with_value(BOX_CLUSTER, key, raw), "calibrate")
    two_nodes = {**BOX_CLUSTER, "num_gpus": "16"}
    for key, desc in [("network_bandwidth_gbits_per_s", "network 1e-300 Gb/s"),
                      ("network_busbw_gbytes_per_s", "network busbw 1e-300 GB/s"),
                      ("nvlink_busbw_gbytes_per_s", "nvlink busbw 1e-300 GB/s"),
                      ("nvlink_bandwidth_gbytes_per_s", "nvlink 1e-300 GB/s"),
                      ("matmul_efficiency_scale", "matmul_efficiency_scale 1e-300")]:
        for table in (False, True):
            text = yaml_text(with_value(two_nodes, key, "1e-300"))

            def setup(f: Path, text=text, table=table) -> Invocation:
                write_tiny(f)
                return Invocation(["estimate", "m.yaml", place(f, "c.yaml", text), *([] if table else ["--json"])])
            yield Case(kind, f"{desc} on 16 GPUs{' (table)' if table else ''}", setup)
    for key, desc in [("memory_gib", "memory_gib 1e-300"), ("dense_tflops", "dense_tflops bf16 1e-300"),
                      ("hbm_bandwidth_gbytes_per_s", "hbm 1e-300 GB/s"), ("power_limit_watts", "power_limit_watts 1e-300")]:
        raw = "{bf16: 1e-300, fp16: 1e-300}" if key == "dense_tflops" else "1e-300"
        yield one(f"inline gpu: {desc}", with_value(INLINE_CLUSTER, f"gpu.{key}", raw))
        yield one(f"inline gpu: {desc} (suggest)", with_value(INLINE_CLUSTER, f"gpu.{key}", raw), "suggest")
    valid = yaml_text(BOX_CLUSTER)
    for desc, content in hostile_files(
            "yaml", valid, lambda raw: yaml_text(with_value(BOX_CLUSTER, "network_bandwidth_gbits_per_s", raw)),
            dup=valid + "gpus_per_node: 4\n"):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "c.yaml", c), f))
    yield Case(kind, "path holding a newline (no such file)", lambda f: use(place(f, "box\nevil.yaml", MISSING), f))


def hf_cases() -> Iterator[Case]:
    kind = "hf-config"

    def use(path: str, folder: Path) -> Invocation:
        return Invocation(["estimate", path, "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq-length", "1024", "--json"])

    muts: list[tuple[str, str | None, str]] = []
    muts += [("num_hidden_layers", raw, f"num_hidden_layers {d}") for raw, d in
             [("true", "true"), ("1e400", "1e400 (infinite)"), ("-1", "negative"), ("0", "0"), ('"4"', "a string"),
              ("null", "null"), ("10000000000000000000", "1e19"), ("4.5", "a fraction"), ("[4]", "a list"),
              (HUGE, HUGE)]]
    muts += [("hidden_size", raw, f"hidden_size {d}") for raw, d in
             [('"512"', "a string"), ("0", "0"), ("1e400", "1e400"), ("-512", "negative")]]
    muts += [("num_attention_heads", raw, f"num_attention_heads {d}") for raw, d in
             [("0", "0"), ("-8", "negative"), ("7", "7 (does not divide 512)"), ("1e400", "1e400")]]
    muts += [("num_key_value_heads", raw, f"num_key_value_heads {d}") for raw, d in
             [("3", "3"), ("0", "0"), ('"8"', "a string"), ("1e400", "1e400")]]
    muts += [("intermediate_size", raw, f"intermediate_size {d}") for raw, d in
             [("-1", "negative"), ("1e400", "1e400"), ('"1376"', "a string")]]
    muts += [("vocab_size", raw, f"vocab_size {d}") for raw, d in [('"32000"', "a string"), ("0", "0"), ("1e400", "1e400")]]
    muts += [("max_position_embeddings", raw, f"max_position_embeddings {d}") for raw, d in
             [("1e400", "1e400"), ("-1", "negative"), ("0", "0"), (HUGE, HUGE), ('"1024"', "a string")]]
    muts += [("hidden_act", raw, f"hidden_act {d}") for raw, d in [("123", "a number"), ('["silu"]', "a list"),
                                                                   ("{}", "an object")]]
    muts += [("tie_word_embeddings", raw, f"tie_word_embeddings {d}") for raw, d in
             [('"false"', 'the string "false"'), ('"no"', 'the string "no"'), ("2", "2")]]
    muts += [("attention_dropout", raw, f"attention_dropout {d}") for raw, d in
             [('"abc"', "a string"), ("[0.1]", "a list"), ("1e400", "1e400"), ("-0.5", "negative"),
              ("2.0", "2.0 (a probability over 1)"), ("true", "true")]]
    muts += [("rope_theta", raw, f"rope_theta {d}") for raw, d in
             [("1e400", "1e400"), ("-1", "negative"), ('"abc"', "a string"), ("0", "0")]]
    muts += [("partial_rotary_factor", raw, f"partial_rotary_factor {d}") for raw, d in
             [("2.0", "2.0 (over 1)"), ("-0.5", "negative"), ('"half"', "a string")]]
    for key, raw, desc in muts:
        text = hf_json(with_value(HF_CONFIG, key, raw))
        yield Case(kind, desc, lambda f, t=text: use(place(f, "tiny-hf/config.json", t), f))
    yield Case(kind, "only model_type", lambda f: use(place(f, "tiny-hf/config.json", '{"model_type": "llama"}'), f))
    valid = hf_json(HF_CONFIG)
    for desc, content in hostile_files("json", valid,
                                       lambda raw: hf_json(with_value(HF_CONFIG, "num_hidden_layers", raw)),
                                       dup=valid.replace("{", '{\n  "num_hidden_layers": 8,', 1)):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "tiny-hf/config.json", c), f))


PLAN_COMMON: list[tuple[str, str | None, str]] = (
    [("plan.tp", raw, f"plan.tp {d}") for raw, d in
     [("0", "0"), ("-2", "negative"), ('"2"', "a string"), ("1e400", "1e400"), ("2.5", "a fraction"),
      ("true", "true"), ("null", "null"), ("[2]", "a list"), ("{}", "an object"), (HUGE, HUGE)]]
    + [("plan.pp", "0", "plan.pp 0"), ("plan.pp", "-1", "plan.pp negative"), ("plan.dp", "0", "plan.dp 0"),
       ("plan.dp", "-4", "plan.dp negative"), ("plan.dp", '"4"', "plan.dp a string"), ("plan.dp", "1e400", "plan.dp 1e400"),
       ("plan.zero_stage", "7", "plan.zero_stage 7"), ("plan.zero_stage", "-1", "plan.zero_stage -1"),
       ("plan.zero_stage", '"1"', "plan.zero_stage a string"), ("plan.micro_batch_size", "0", "plan.micro_batch_size 0"),
       ("plan.global_batch_size", "-64", "plan.global_batch_size negative"),
       ("plan.recompute", '"sometimes"', "plan.recompute sometimes"), ("plan.precision", '"fp64"', "plan.precision fp64"),
       ("plan.vpp", "0", "plan.vpp 0"), ("plan.sequence_parallel", '"yes"', "plan.sequence_parallel a string"),
       ("plan.stage_layers", "[-1, 33]", "plan.stage_layers negative"),
       ("plan.stage_layers", '"16,16"', "plan.stage_layers a string"),
       ("plan", "[]", "plan a list"), ("plan", '"tp2"', "plan a string"), ("plan", "null", "plan null"),
       ("plan", None, "plan missing"), ("plan.tpp", "8", "plan unknown key tpp")]
    + [("step_time_s", raw, f"step_time_s {d}") for raw, d in
       [("-1", "negative"), ("0", "0"), ('"fast"', "a string"), ("1e400", "1e400"), ("-1e400", "-1e400"),
        ("null", "null"), ("[1]", "a list"), ("true", "true")]]
    + [("model", raw, f"model name {d}") for raw, d in
       [('"llama3-8b\\n"', "with a newline"), ('"$(touch pwned)"', "holding $(...)"),
        ('"`touch pwned`"', "holding backticks"), ('"a\\"b\'c"', "holding quotes"), ("123", "a number"),
        ('["llama3-8b"]', "a list")]]
    + [("cluster", '"dgx-h100\\n$(touch pwned)"', "cluster name with a newline and $(...)"),
       ("cluster", '"$(touch pwned)"', "cluster name holding $(...)"), ("cluster", "42", "cluster a number")]
    + [("mfu", "2.5", "mfu 2.5 (over 100%)"), ("mfu", "-0.1", "mfu negative"), ("mfu", '"x"', "mfu a string"),
       ("mfu", "1e400", "mfu 1e400"), ("memory_per_gpu_bytes", "-1", "memory_per_gpu_bytes negative"),
       ("memory_per_gpu_bytes", '"80GB"', "memory_per_gpu_bytes a string"),
       ("memory_per_gpu_bytes", "1e400", "memory_per_gpu_bytes 1e400")]
)
PLAN_COMPARE_ONLY = [
    ("time_breakdown_s", '"x"', "time_breakdown_s a string"), ("time_breakdown_s", "[]", "time_breakdown_s a list"),
    ("time_breakdown_s.compute", '"x"', "time_breakdown_s.compute a string"),
    ("time_breakdown_s.compute", "-5", "time_breakdown_s.compute negative"),
    ("time_breakdown_s.compute", "1e400", "time_breakdown_s.compute 1e400"),
    ("usd_per_step", "-1", "usd_per_step negative"), ("usd_per_step", '"x"', "usd_per_step a string"),
    ("usd_per_step", "1e400", "usd_per_step 1e400")]
PLAN_EMIT_ONLY = [
    ("tokens_per_s", "-1", "tokens_per_s negative"), ("tokens_per_s", '"x"', "tokens_per_s a string"),
    ("tokens_per_s", "1e400", "tokens_per_s 1e400"), ("num_gpus", "0", "num_gpus 0"),
    ("num_gpus", '"8"', "num_gpus a string"), ("num_gpus", "1e400", "num_gpus 1e400"),
    ("gpus_per_node", "0", "gpus_per_node 0"), ("gpus_per_node", '"8"', "gpus_per_node a string"),
    ("gpus_per_node", "1e400", "gpus_per_node 1e400"), ("fits", '"no"', 'fits the string "no"'),
    ("memory_capacity_bytes", '"x"', "memory_capacity_bytes a string"),
    ("memory_capacity_bytes", "-1", "memory_capacity_bytes negative"),
    ("training", '"x"', "training a string"), ("training.steps", "-5", "training.steps negative"),
    ("training.steps", '"many"', "training.steps a string"), ("training.steps", "1e400", "training.steps 1e400")]


# The shape of a plan file (not a complete estimate), for the file-level defects of hostile_files.
PLAN_SHAPE = '{"model": "llama3-8b", "cluster": "dgx-h100", "num_gpus": 8, "plan": {"tp": 2, "pp": 1, "dp": 4}}'


def plan_cases() -> Iterator[Case]:
    def compare(mutated_text: str, folder: Path, json_out: bool = False) -> Invocation:
        write_plans(folder)
        place(folder, "bad.json", mutated_text)
        return Invocation(["compare", "bad.json", "b.json", *(["--json"] if json_out else [])])

    def emit(path: str, folder: Path) -> Invocation:
        return Invocation(["emit", path, "--format", "megatron", "--out", "out"])

    for path, raw, desc in PLAN_COMMON + PLAN_COMPARE_ONLY:
        yield Case("plan-json:compare", desc,
                   lambda f, p=path, r=raw: compare(json_with(scored(*PLAN_A), p, r), f))
    for path, raw, desc in [("plan.tp", "0", "plan.tp 0"), ("step_time_s", "1e400", "step_time_s 1e400"),
                            ("step_time_s", "-1", "step_time_s negative"), ("mfu", "2.5", "mfu 2.5"),
                            ("time_breakdown_s.compute", "-5", "time_breakdown_s.compute negative"),
                            ("model", '"llama3-8b\\n"', "model name with a newline")]:
        yield Case("plan-json:compare", f"--json: {desc}",
                   lambda f, p=path, r=raw: compare(json_with(scored(*PLAN_A), p, r), f, True))
    yield Case("plan-json:compare", "both plans step_time_s 0",
               lambda f: Invocation(["compare", place(f, "z1.json", json_with(scored(*PLAN_A), "step_time_s", "0")),
                                     place(f, "z2.json", json_with(scored(*PLAN_B), "step_time_s", "0"))]))
    yield Case("plan-json:compare", "suggest-shaped object with an empty plans list",
               lambda f: compare('{"plans": []}', f))
    yield Case("plan-json:compare", "suggest-shaped object whose first plan is a number",
               lambda f: compare('{"plans": [1]}', f))
    yield Case("plan-json:compare", "a list of two estimates",
               lambda f: compare(json.dumps([scored(*PLAN_A), scored(*PLAN_B)]), f))

    for path, raw, desc in PLAN_COMMON + PLAN_EMIT_ONLY:
        if desc == "step_time_s null":  # a hand-written plan without a score, which emit accepts by design
            continue
        yield Case("plan-json:emit", desc,
                   lambda f, p=path, r=raw: emit(place(f, "plan.json", json_with(scored(*PLAN_A), p, r)), f))

    def valid_a() -> str:
        return json.dumps(scored(*PLAN_A), indent=1)

    for command in ("compare", "emit"):
        kind = f"plan-json:{command}"
        for desc, content in hostile_files("json", PLAN_SHAPE, None, None, truncate=False):
            if command == "compare":
                yield Case(kind, desc, lambda f, c=content: (write_plans(f), Invocation(
                    ["compare", place(f, "bad.json", c), "b.json"]))[1])
            else:
                yield Case(kind, desc, lambda f, c=content: emit(place(f, "plan.json", c), f))

        def numeric(raw: str) -> str:
            return json_with(scored(*PLAN_A), "step_time_s", raw)

        for desc, raw in [("NaN literal", "NaN"), ("Infinity literal", "Infinity"), ("-Infinity literal", "-Infinity"),
                          ("a 5000-digit integer", "9" * 5000), ("a value nested 20,000 deep", deep_flow("[", "]"))]:
            if command == "compare":
                yield Case(kind, f"step_time_s: {desc}", lambda f, r=raw: compare(numeric(r), f))
            else:
                yield Case(kind, f"step_time_s: {desc}",
                           lambda f, r=raw: emit(place(f, "plan.json", numeric(r)), f))
        for desc, make in [("a key given twice", lambda: valid_a().replace("{", '{\n "step_time_s": 1.0,', 1)),
                           ("a real plan truncated to its first half", lambda: valid_a()[: len(valid_a()) // 2]),
                           ("UTF-16 text of a valid plan", lambda: valid_a().encode("utf-16"))]:
            if command == "compare":
                yield Case(kind, desc, lambda f, m=make: (write_plans(f), Invocation(
                    ["compare", place(f, "bad.json", m()), "b.json"]))[1])
            else:
                yield Case(kind, desc, lambda f, m=make: emit(place(f, "plan.json", m()), f))
    # stdin
    yield _argv("plan-json:emit", "stdin: binary bytes", ["emit", "-", "--format", "megatron", "--out", "out"],
                stdin=bytes(range(256)) * 4)
    yield _argv("plan-json:emit", "stdin: empty", ["emit", "-", "--format", "megatron", "--out", "out"])
    yield _argv("plan-json:emit", "stdin: nested 20,000 deep", ["emit", "-", "--format", "megatron", "--out", "out"],
                stdin=deep_flow("[", "]").encode())
    yield _argv("plan-json:emit", "stdin: over 16 MiB", ["emit", "-", "--format", "megatron", "--out", "out"],
                stdin=b" " * (17 * MIB))
    yield Case("plan-json:compare", "stdin: YAML instead of JSON",
               lambda f: (write_plans(f), Invocation(["compare", "-", "b.json"], {}, b"plan: {tp: 2}\n"))[1])


def flag_cases() -> Iterator[Case]:
    # estimate
    kind = "flags:estimate"
    for flag in ("--tp", "--pp", "--dp", "--vpp", "--mbs", "--gbs", "--gas", "--gpus", "--seq-length"):
        for value in ("nan", "inf", "-inf", "0", "-1", "1e400", "1e18", HUGE, "abc", "", "2.5"):
            if flag in ("--gbs",) and value == HUGE:
                continue
            yield _argv(kind, f"{flag}={value}", replace_flag(ESTIMATE_BASE, flag, value))
    for argv_tail, desc in [
        (["--zero=4"], "--zero 4"), (["--zero=nan"], "--zero nan"), (["--recompute=sometimes"], "--recompute bogus"),
        (["--precision=fp64"], "--precision fp64"), (["--grad-dtype=int4"], "--grad-dtype int4"),
        (["--stage-layers=a,b"], "--stage-layers letters"), (["--pp=2", "--stage-layers=16,,16"], "--stage-layers empty entry"),
        (["--pp=2", "--stage-layers=-1,33"], "--stage-layers negative"), (["--pp=2", "--stage-layers=0,32"], "--stage-layers 0"),
        (["--pp=2", "--stage-layers=99999999999999999999,1"], "--stage-layers 1e20"),
        (["--stage-layers=nan"], "--stage-layers nan"), (["--pp=2", "--stage-layers=16,15"], "--stage-layers not summing to 32"),
        (["--comm-threshold=nan"], "--comm-threshold nan"), (["--comm-threshold=inf"], "--comm-threshold inf"),
        (["--comm-threshold=-inf"], "--comm-threshold -inf"), (["--comm-threshold=-0.3"], "--comm-threshold negative"),
        (["--comm-threshold=1e400"], "--comm-threshold 1e400"), (["--comm-threshold=abc"], "--comm-threshold abc"),
        (["--tpp=8"], "unknown flag --tpp"), (["--gas=3"], "--gbs 64 with --gas 3 (64 != 1 x 4 x 3)"),
        (["--dp=3"], "--dp 3 with 8 GPUs and tp 2"), (["--sequence-parallel", "--tp=1"], "--sequence-parallel with tp 1"),
        (["--vpp=5"], "--vpp 5 with pp 1"), (["--mbs=" + HUGE], f"--mbs {HUGE}"), (["--gbs=1000000000000000000"], "--gbs 1e18 as digits"),
        (["extra-positional"], "an extra positional argument")]:
        yield _argv(kind, desc, [*ESTIMATE_BASE, *argv_tail])
    yield _argv(kind, "--tp=8 --pp=4 on 8 GPUs", ["estimate", "llama3-8b", "dgx-h100", "--gpus=8", "--tp=8", "--pp=4", "--json"])
    yield _argv(kind, "model name holding a newline", ["estimate", "llama3-8b\n", "dgx-h100", "--gpus=8", "--json"])
    yield _argv(kind, "model name holding $(...)", ["estimate", "$(touch pwned)", "dgx-h100", "--gpus=8", "--json"])
    yield _argv(kind, "cluster name holding a newline", ["estimate", "llama3-8b", "dgx-h100\nx", "--gpus=8", "--json"])
    yield _argv(kind, "cluster name holding backticks", ["estimate", "llama3-8b", "`touch pwned`", "--gpus=8", "--json"])
    yield _argv(kind, "empty model name", ["estimate", "", "dgx-h100", "--gpus=8", "--json"])

    # suggest
    kind = "flags:suggest"
    for flag, values in [("--gpus", ("0", "-8", "nan", "inf", "1e400", HUGE, "abc", "")),
                         ("--gbs", ("1e18", "1000000000000000000", "0", "-1", "nan")),
                         ("--top", ("0", "-1", "nan", "1e400", "abc")),
                         ("--max-memory-fraction", ("nan", "inf", "-inf", "0", "-0.5", "1e400", "5", "abc", "1e-300")),
                         ("--seq-length", ("0", "nan", HUGE)),
                         ("--framework", ("bogus", "", ",,", "megatron,bogus")),
                         ("--precision", ("", "fp64", "bf16,,fp64")), ("--grad-dtype", ("fp64", "")),
                         ("--solver", ("bogus",)), ("--objective", ("bogus",)),
                         ("--what-if-grid", ("network=", "network=nan,1", "network=0.5,inf", "bogus=1,2",
                                             "network=1e-308,1", "network", "=0.5,1", "price.h100-sxm-80gb=1,nan"))]:
        for value in values:
            yield _argv(kind, f"{flag}={value}", replace_flag(SUGGEST_BASE, flag, value))
    yield _argv(kind, f"--gpus {HUGE} (brief)", ["suggest", "llama3-8b", "dgx-h100", "--gpus", HUGE, "--gbs", "64"])
    for fixes, desc in [(["tp=8", "tp=4"], "conflicting --fix tp=8 --fix tp=4"),
                        (["zero=1", "zero=2"], "conflicting --fix zero=1 --fix zero=2"),
                        (["tp=nan"], "--fix tp=nan"), (["tp=inf"], "--fix tp=inf"), (["tp=0"], "--fix tp=0"),
                        (["tp=-8"], "--fix tp=-8"), (["tp=1e400"], "--fix tp=1e400"), ([f"tp={HUGE}"], f"--fix tp={HUGE}"),
                        (["tp=8.5"], "--fix tp=8.5"), (["tp=abc"], "--fix tp=abc"), (["foo=1"], "--fix foo=1"),
                        (["tp"], "--fix tp (no value)"), (["=8"], "--fix =8"), (["sp=maybe"], "--fix sp=maybe"),
                        (["precision=fp64"], "--fix precision=fp64"), (["recompute=sometimes"], "--fix recompute=sometimes"),
                        (["zero=4"], "--fix zero=4"), (["zero=-1"], "--fix zero=-1"), (["mbs=0"], "--fix mbs=0"),
                        ([f"vpp={HUGE}"], f"--fix vpp={HUGE}"), (["dp=3"], "--fix dp=3 on 8 GPUs")]:
        yield _argv(kind, desc, [*SUGGEST_BASE, *[f"--fix={x}" for x in fixes]])
    yield _argv(kind, "--precision fp8 with --fix precision=bf16", [*SUGGEST_BASE, "--precision=fp8", "--fix=precision=bf16"])
    yield _argv(kind, "--grad-dtype bf16 with --fix grad=int8", [*SUGGEST_BASE, "--grad-dtype=bf16", "--fix=grad=int8"])
    yield _argv(kind, "--emit bogus", [*SUGGEST_BASE, "--emit=bogus"])
    yield _argv(kind, "--emit deepspeed --out an existing file", [*SUGGEST_BASE, "--emit=deepspeed", "--out=afile"],
                before=lambda f: place(f, "afile", "x\n"))
    yield _argv(kind, "--emit megatron --out /dev/null", [*SUGGEST_BASE, "--framework=megatron", "--emit=megatron",
                                                          "--out=/dev/null"])
    yield _argv(kind, "--out without --emit", [*SUGGEST_BASE, "--out=somewhere"])

    # size
    kind = "flags:size"
    for flag, values in [("--tokens", ("nan", "inf", "-inf", "0", "-1", "1e400", "1e30", "abc", "")),
                         ("--gbs", ("1e18", "1000000000000000000", "0", "-64", "nan")),
                         ("--deadline-days", ("inf", "nan", "0", "-1", "1e400")),
                         ("--budget-usd", ("nan", "inf", "-5", "0", "1e400", "abc")),
                         ("--failures-per-1000-gpu-days", ("inf", "nan", "-1", "1e400", "1e30")),
                         ("--restart-minutes", ("nan", "inf", "-1", "1e400")),
                         ("--checkpoint-gbytes-per-s-per-node", ("nan", "inf", "0", "-1", "1e-308")),
                         ("--max-gpus", ("0", "-1", "nan", HUGE, "abc")), ("--tokens", ("1e-300", "0.5")),
                         ("--gpu-types", ("nonexistent", "", ",,,", "h100-sxm-80gb,$(touch pwned)", "h100-sxm-80gb\nb200")),
                         ("--workers", ("0", "-1", "nan", HUGE)), ("--seq-length", ("nan", "0", HUGE)),
                         ("--plot", ("x.png",)),
                         ("--what-if-grid", ("price.h100-sxm-80gb=1,nan", "network=1,inf", "network="))]:
        for value in values:
            yield _argv(kind, f"{flag}={value}", replace_flag(SIZE_BASE, flag, value))
    for value in ("price.h100-sxm-80gb=inf", "price.h100-sxm-80gb=nan", "price.h100-sxm-80gb=-1",
                  "price.h100-sxm-80gb=1e400", "price.h100-sxm-80gb=0", "price.nonexistent=2", "network=nan",
                  "network=1e-308"):
        yield _argv(kind, f"--what-if {value}", [*SIZE_BASE, f"--what-if={value}"])
    yield _argv(kind, "--checkpoint-gbytes-per-s-per-node 1e-308 (table)",
                [a for a in SIZE_BASE if a != "--json"] + ["--checkpoint-gbytes-per-s-per-node=1e-308"])
    yield _argv(kind, "--failures-per-1000-gpu-days 1000 with --restart-minutes 5e7 (table)",
                [a for a in SIZE_BASE if a != "--json"] + ["--failures-per-1000-gpu-days=1000", "--restart-minutes=5e7"])
    yield _argv(kind, "--plot to a folder", [*SIZE_BASE, "--plot=p.svg"], before=lambda f: (f / "p.svg").mkdir())
    yield _argv(kind, "no --tokens and a model without training_tokens",
                ["size", "m.yaml", "--max-gpus=16", "--gpu-types=h100-sxm-80gb", "--workers=1", "--json"],
                before=lambda f: place(f, "m.yaml", yaml_text(with_value(TINY_MODEL, "training_tokens", None))))

    # compare, emit, calibrate, validate, catalog, top level
    kind = "flags:compare"
    yield _argv(kind, "one file only", ["compare", "a.json"], before=write_plans)
    yield _argv(kind, "three files", ["compare", "a.json", "b.json", "a.json"], before=write_plans)
    yield _argv(kind, "unknown flag", ["compare", "a.json", "b.json", "--bogus"], before=write_plans)
    yield _argv(kind, "A path holding a newline", ["compare", "a\n.json", "b.json"], before=write_plans)

    kind = "flags:emit"
    emit_base = ["emit", "a.json", "--format=megatron", "--out=out"]
    for tail, desc in [(["--format=bogus"], "--format bogus"), (["--gpus-per-node=0"], "--gpus-per-node 0"),
                       (["--gpus-per-node=nan"], "--gpus-per-node nan"), ([f"--gpus-per-node={HUGE}"], f"--gpus-per-node {HUGE}"),
                       (["--gpus-per-node=-8"], "--gpus-per-node negative"), (["--gpus-per-node=3"], "--gpus-per-node 3 (8 GPUs)"),
                       (["--seq-length=nan"], "--seq-length nan"), (["--seq-length=0"], "--seq-length 0"),
                       ([f"--seq-length={HUGE}"], f"--seq-length {HUGE}"), (["--model=nonexistent-model"], "--model unknown"),
                       (["--model=llama3-70b"], "--model not the plan's model"),
                       (["--model=no\nsuch.yaml"], "--model path holding a newline")]:
        yield _argv(kind, desc, [*emit_base, *tail], before=write_plans)
    yield _argv(kind, "--out missing", ["emit", "a.json", "--format=megatron"], before=write_plans)
    yield _argv(kind, "--out an existing file", ["emit", "a.json", "--format=megatron", "--out=afile"],
                before=lambda f: (write_plans(f), place(f, "afile", "x\n")))
    yield _argv(kind, "--out /dev/null", ["emit", "a.json", "--format=megatron", "--out=/dev/null"], before=write_plans)
    yield _argv(kind, "--out empty", ["emit", "a.json", "--format=megatron", "--out="], before=write_plans)
    yield _argv(kind, "existing files without --force", emit_base,
                before=lambda f: (write_plans(f), place(f, "out/megatron/launch.sh", "#!/bin/sh\n")))
    yield _argv(kind, "--offload-param cpu with ZeRO 1", ["emit", "a.json", "--format=deepspeed", "--out=out",
                                                          "--offload-param=cpu"], before=write_plans)
    yield _argv(kind, "--offload-optimizer nvme without --nvme-path",
                ["emit", "a.json", "--format=deepspeed", "--out=out", "--offload-optimizer=nvme"], before=write_plans)

    kind = "flags:calibrate"
    cal = ["calibrate", "dgx-h100", f"--nccl={NCCL_EXAMPLE}", "--json"]
    for value in ("0", "-1", "nan", "inf", "1e400", "64X", "2P", "", "1e3"):
        yield _argv(kind, f"--min-size={value}", [*cal, f"--min-size={value}"])
    for tail, desc in [(["--collective=bogus"], "--collective bogus"), (["--collective="], "--collective empty"),
                       (["--nccl=nope.txt"], "--nccl missing file"), (["--out=o.yaml", "--plot=o.yaml"], "--out and --plot the same"),
                       (["--out=."], "--out a folder"), (["--out=exists.yaml"], "--out existing without --force")]:
        yield _argv(kind, desc, [*cal, *tail], before=lambda f: place(f, "exists.yaml", "x: 1\n"))
    yield _argv(kind, "nothing to calibrate from", ["calibrate", "dgx-h100", "--json"])
    yield _argv(kind, "--plot without --nccl", ["calibrate", "dgx-h100", "--plot=p.svg",
                                                "--step-times=nope.csv"])
    yield _argv(kind, "cluster name unknown", ["calibrate", "dgx-h1000", f"--nccl={NCCL_EXAMPLE}"])
    yield _argv(kind, "cluster name holding a newline", ["calibrate", "dgx-h100\n", f"--nccl={NCCL_EXAMPLE}"])

    kind = "flags:validate"
    for tail, desc in [(["--group=bogus"], "--group bogus"), (["--group="], "--group empty"),
                       (["--fit-on=bogus"], "--fit-on bogus"), (["--runs=nope.yaml"], "--runs missing file"),
                       (["--runs=."], "--runs a folder"), (["--group=bloom\n"], "--group holding a newline")]:
        yield _argv(kind, desc, ["validate", *tail, "--json"])

    kind = "flags:catalog"
    for argv, desc in [(["catalog", "bogus"], "kind bogus"), (["catalog"], "no kind"), (["catalog", "GPUS"], "kind GPUS"),
                       (["catalog", "gpus", "--bogus"], "unknown flag")]:
        yield _argv(kind, desc, argv)

    kind = "flags:global"
    for argv, desc in [([], "no command"), (["bogus"], "unknown command"), (["estimate"], "estimate without arguments"),
                       (["--json"], "--json without a command"), (["estimate", "llama3-8b"], "estimate without CLUSTER"),
                       (["suggest", "--gpus=8"], "suggest without MODEL")]:
        yield _argv(kind, desc, argv)


def what_if_cases() -> Iterator[Case]:
    kind = "what-if"
    values = ["network=1e-308", "network=nan", "network=inf", "network=-inf", "network=-1", "network=0",
              "network=1e400", "network=1e300", "network=abc", "network=", "network", "=0.5", "network=0.5=0.6",
              "nvlink=nan", "nvlink=1e-308", "hbm=1e-308", "hbm=inf", "hbm=0", "matmul_efficiency=1e6",
              "matmul_efficiency=1e-308", "matmul_efficiency=nan", "price.h100-sxm-80gb=inf", "price.h100-sxm-80gb=nan",
              "price.h100-sxm-80gb=-2", "price.h100-sxm-80gb=0", "price.h100-sxm-80gb=1e400", "price.h100-sxm-80gb=1e30",
              "price.nonexistent-gpu=2", "price.=2", "price.h100-sxm-80gb", "rdma=maybe", "rdma=1", "rdma=",
              "power=nan", "power=inf", "power=-500", "power=0", "power=1e-308", "power=1e9", "bogus=1",
              "price.$(touch pwned)=2"]
    for value in values:
        yield _argv(kind, f"estimate --what-if {value!r}", [*ESTIMATE_BASE, f"--what-if={value}"])
    yield _argv(kind, "conflicting --what-if network=0.5 --what-if network=0.8",
                [*ESTIMATE_BASE, "--what-if=network=0.5", "--what-if=network=0.8"])
    yield _argv(kind, "conflicting price.h100-sxm-80gb=2 then =3",
                [*ESTIMATE_BASE, "--what-if=price.h100-sxm-80gb=2", "--what-if=price.h100-sxm-80gb=3"])
    for value in ("network=1e-308", "matmul_efficiency=1e6", "power=1e-308", "hbm=1e-308", "network=nan"):
        yield _argv(kind, f"suggest --what-if {value}", [*SUGGEST_BASE, f"--what-if={value}"])


def nccl_cases() -> Iterator[Case]:
    kind = "nccl-log"

    def use(path: str, folder: Path) -> Invocation:
        return Invocation(["calibrate", "dgx-h100", "--nccl", path, "--json"])

    def setn(tokens: list[str], cols, value) -> list[str]:
        out = list(tokens)
        for c in cols:
            out[c] = value
        return out

    texts: list[tuple[str, str]] = [
        ("every time negative", nccl_log(nccl_rows_with(lambda t: setn(t, (T_OOP, T_IP), "-" + t[T_OOP])))),
        ("every time zero", nccl_log(nccl_rows_with(lambda t: setn(t, (T_OOP, T_IP), "0.00")))),
        ("every time and bandwidth nan", nccl_log(nccl_rows_with(lambda t: setn(t, (T_OOP, T_IP, *BW), "nan")))),
        ("every time 1e400", nccl_log(nccl_rows_with(lambda t: setn(t, (T_OOP, T_IP), "1e400")))),
        ("every time inf", nccl_log(nccl_rows_with(lambda t: setn(t, (T_OOP, T_IP), "inf")))),
        ("message sizes of 1e30 bytes", nccl_log(nccl_rows_with(
            lambda t: [str(int(t[0]) * 10**21), str(int(t[1]) * 10**21), *t[2:]]))),
        ("every message size 5000 digits", nccl_log(nccl_rows_with(lambda t: ["9" * 5000, *t[1:]]))),
        ("times shrink as messages grow", nccl_log(
            [" ".join(r.split()[:T_OOP] + [s.split()[T_OOP]] + r.split()[T_OOP + 1:T_IP] + [s.split()[T_IP]]
                      + r.split()[T_IP + 1:]) for r, s in zip(nccl_parts()[1], reversed(nccl_parts()[1]))])),
        ("every message size takes the same time", nccl_log(nccl_rows_with(lambda t: setn(t, (T_OOP, T_IP), "815.49")))),
        ("only the header, no rows", nccl_log([])),
        ("two collectives in one file", nccl_log() + nccl_log().replace("all_reduce_perf", "all_gather_perf")),
        ("a second table with different columns", nccl_log() + "#  bytes  N  type  op  time  algbw  busbw  res\n"
         + "  134217728  33554432  float  sum  0.815  164.59  288.03  0e+00\n"),
        ("random prose", "The quick brown fox jumps over the lazy dog.\n" * 50),
    ]
    one_rank = [ln for ln in nccl_parts()[0] if "Rank" not in ln or "Rank  0 " in ln]
    one_rank = [ln.replace("nGpus 8", "nGpus 1") for ln in one_rank]
    texts.append(("a one-GPU all_reduce (busbw 0)",
                  nccl_log(nccl_rows_with(lambda tk: setn(tk, (7, 11), "0.00")), head=one_rank)))
    for desc, text in texts:
        yield Case(kind, desc, lambda f, x=text: use(place(f, "all_reduce_perf.log", x), f))

    doc = nccl_json_doc()
    jsons: list[tuple[str, str]] = [
        ("-J JSON nested 20,000 deep", '{"results": ' + deep_flow("[", "]") + "}"),
        ("-J JSON NaN literal time", json_with(doc, "results.0.out_of_place.time", "NaN")),
        ("-J JSON results not a list", json_with(doc, "results", '"none"')),
        ("-J JSON results empty", json_with(doc, "results", "[]")),
        ("-J JSON size a string", json_with(doc, "results.0.size", '"134217728"')),
        ("-J JSON nwrong 1e400", json_with(doc, "results.6.out_of_place.nwrong", "1e400")),
        ("-J JSON a 5000-digit size", json_with(doc, "results.6.size", "9" * 5000)),
        ("-J JSON truncated", json.dumps(doc)[:500]),
    ]

    def every(path: str, raw: str) -> str:
        d = copy.deepcopy(doc)
        for res in d["results"]:
            for sec in ("out_of_place", "in_place"):
                res[sec][path] = _RAW
        return json.dumps(d).replace(json.dumps(_RAW), raw)

    jsons += [("-J JSON every time the string inf", every("time", '"inf"')),
              ("-J JSON every time negative", every("time", "-5.0")),
              ("-J JSON every time 0", every("time", "0")),
              ("-J JSON every time 1e400", every("time", "1e400"))]
    neg = copy.deepcopy(doc)
    for res in neg["results"]:
        res["size"] = -res["size"]
    jsons.append(("-J JSON every size negative", json.dumps(neg)))
    for desc, text in jsons:
        yield Case(kind, desc, lambda f, x=text: use(place(f, "all_reduce_perf.json", x), f))
    for desc, content in hostile_files("text", nccl_log()):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "all_reduce_perf.log", c), f))


def step_time_cases() -> Iterator[Case]:
    kind = "step-times"

    def use(path: str, folder: Path) -> Invocation:
        return Invocation(["calibrate", "dgx-h100", "--step-times", path, "--json"])

    def with_cell(column: str, value: str, columns=STEP_COLUMNS) -> str:
        cols = list(columns)
        rows = [list(r) for r in STEP_ROWS]
        if column not in cols:
            cols.append(column)
            for r in rows:
                r.append(rows[0][cols.index("tp")] if column in ("zer", "tp") else "1")
        rows[0][cols.index(column)] = value
        return csv_text(cols, rows)

    muts = [("step_time_s", v) for v in ("nan", "inf", "-inf", "-1", "0", "fast", "1e400", "")]
    muts += [("tp", v) for v in ("0", "-1", "nan", "abc", "1e400", HUGE)]
    muts += [("gpus", v) for v in ("0", "-1", "nan", "1e3", HUGE, "8.9")]
    muts += [("model", v) for v in ("", "nonexistent-model", '"llama3-8b\nx"', "$(touch pwned)")]
    muts += [("zero", "4"), ("mbs", "0"), ("gbs", "1e18")]
    for column, value in muts:
        yield Case(kind, f"CSV {column} {value!r}", lambda f, c=column, v=value: use(place(f, "s.csv", with_cell(c, v)), f))
    extra_cols = STEP_COLUMNS + ["recompute", "sequence_parallel", "seq_length"]
    extra_rows = [r + ["none", "false", "8192"] for r in STEP_ROWS]
    for column, value, desc in [("recompute", "sometimes", "recompute bogus"), ("sequence_parallel", "maybe", "sequence_parallel maybe"),
                                ("seq_length", "nan", "seq_length nan"), ("seq_length", "1e400", "seq_length 1e400")]:
        rows = [list(r) for r in extra_rows]
        rows[0][extra_cols.index(column)] = value
        text = csv_text(extra_cols, rows)
        yield Case(kind, f"CSV {desc}", lambda f, t=text: use(place(f, "s.csv", t), f))
    for desc, text in [
        ("CSV unknown column tpp", with_cell("tpp", "2")),
        ("CSV column 'zer' (a prefix of --zero)", with_cell("zer", "1")),
        ("CSV column 'help'", with_cell("help", "1")),
        ("CSV a row with more fields than the header", csv_text(STEP_COLUMNS, [STEP_ROWS[0] + ["9", "9"], STEP_ROWS[1]])),
        ("CSV duplicate column tp with different values (the last one right)",
         csv_text(STEP_COLUMNS + ["tp"], [["r1", "llama3-8b", "8", "4", "1", "1", "64", "1", "8.2", "2"],
                                          ["r2", "llama3-8b", "8", "2", "1", "1", "64", "1", "9.9", "4"]])),
        ("CSV a field over the csv module's field size limit",
         csv_text(STEP_COLUMNS, [["r" * 200_000] + STEP_ROWS[0][1:], STEP_ROWS[1]])),
        ("CSV header only", csv_text(STEP_COLUMNS, [])),
        ("CSV no header line", csv_text(STEP_ROWS[0], STEP_ROWS[1:])),
        ("CSV unterminated quote", csv_text(STEP_COLUMNS, STEP_ROWS) + '"r3,llama3-8b,8,2,1,1,64,1,8.2\n'),
        ("CSV separated by semicolons", ";".join(STEP_COLUMNS) + "\n" + "\n".join(";".join(r) for r in STEP_ROWS) + "\n"),
    ]:
        yield Case(kind, desc, lambda f, t=text: use(place(f, "s.csv", t), f))
    valid_csv = csv_text(STEP_COLUMNS, STEP_ROWS)
    for desc, content in hostile_files("csv", valid_csv):
        yield Case(kind, f"CSV {desc}", lambda f, c=content: use(place(f, "s.csv", c), f))

    base_rows = [dict(zip(STEP_COLUMNS, r)) for r in STEP_ROWS]

    def yaml_rows(key: str | None = None, raw: str | None = None) -> str:
        rows = copy.deepcopy(base_rows)
        if key is not None:
            rows[0][key] = raw
        return yaml_list(rows)

    for key, raw in [("tp", "[2]"), ("tp", "true"), ("tp", ".nan"), ("step_time_s", ".inf"), ("step_time_s", "true"),
                     ("step_time_s", ".nan"), ("gpus", "true"), ("gpus", "8.9"), ("gpus", "1e400"),
                     ("seq_length", "1e400"), ("seq_length", ".nan"), ("model", "123"), ("model", "[a]"),
                     ("stage_layers", "[[1]]"), ("zero", "1.5")]:
        yield Case(kind, f"YAML {key}: {raw}", lambda f, k=key, r=raw: use(place(f, "s.yaml", yaml_rows(k, r)), f))
    one_gpu = [dict(zip(STEP_COLUMNS, ["r1", "llama3-8b", "true", "1", "1", "1", "64", "3", "60.0"]))]
    yield Case(kind, "YAML gpus: true with a 1-GPU plan", lambda f: use(place(f, "s.yaml", yaml_list(one_gpu)), f))
    for desc, text in [("YAML a list of numbers", "- 1\n- 2\n"), ("YAML a mapping without steps", "tp: 2\n"),
                       ("YAML steps: a string", "steps: x\n"), ("YAML an empty list", "[]\n")]:
        yield Case(kind, desc, lambda f, t=text: use(place(f, "s.yaml", t), f))
    valid_yaml = yaml_rows()
    for desc, content in hostile_files("yaml", valid_yaml, lambda raw: yaml_rows("tp", raw),
                                       dup=valid_yaml.replace("  tp: 2\n", "  tp: 2\n  tp: 4\n", 1), truncate=False):
        yield Case(kind, f"YAML {desc}", lambda f, c=content: use(place(f, "s.yaml", c), f))


def price_cases() -> Iterator[Case]:
    kind = "prices"

    def use(path: str, folder: Path) -> Invocation:
        return Invocation([*SIZE_BASE, "--prices", path])

    for raw, desc in [(".inf", ".inf"), (".nan", ".nan"), ("-1", "negative"), ("0", "0"), ("1e400", "1e400"),
                      ("true", "true"), ('"2.10"', "a string"), ("null", "null"), ("[2.5]", "a list"),
                      ("{a: 1}", "a mapping"), ("1e30", "1e30")]:
        text = f"h100-sxm-80gb: {raw}\n"
        yield Case(kind, f"h100 price {desc}", lambda f, t=text: use(place(f, "p.yaml", t), f))
    for text, desc in [("nonexistent-gpu: 2.0\n", "unknown GPU or cluster name"),
                       ('"h100-sxm-80gb\\n": 2.0\n', "name holding a newline"),
                       ('"$(touch pwned)": 2.0\n', "name holding $(...)"), ("dgx-h100: .inf\n", "cluster price .inf"),
                       ("h100-sxm-80gb: 2.0\nh100-sxm-80gb: 3.0\n", "a name given twice"),
                       ("- h100-sxm-80gb: 2\n", "a list"), ("2.5\n", "a number")]:
        yield Case(kind, desc, lambda f, t=text: use(place(f, "p.yaml", t), f))
    valid = "h100-sxm-80gb: 2.0\n"
    for desc, content in hostile_files("yaml", valid, lambda raw: f"h100-sxm-80gb: {raw}\n",
                                       dup="h100-sxm-80gb: 2.0\nh100-sxm-80gb: 2.0\n", truncate=False):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "p.yaml", c), f))
    for desc, content in [("JSON NaN price", '{"h100-sxm-80gb": NaN}'), ("JSON 1e400 price", '{"h100-sxm-80gb": 1e400}')]:
        yield Case(kind, desc, lambda f, c=content: use(place(f, "p.json", c), f))


def size_catalog_cases() -> Iterator[Case]:
    kind = "size-catalog"
    base = ["size", "llama3-8b", "--tokens", "1e10", "--gbs", "64", "--max-gpus", "16", "--workers", "1", "--json"]

    def use(path: str, folder: Path) -> Invocation:
        return Invocation([*base, "--catalog", path])

    def rows_with(key: str, raw: str | None) -> str:
        return yaml_list([with_value(OFFERING, key, raw)])

    for key, raw, desc in [("network_bandwidth_gbits_per_s", ".inf", "network .inf"), ("usd_per_gpu_hour", ".nan", "price .nan"),
                           ("usd_per_gpu_hour", ".inf", "price .inf"), ("gpu", "nonexistent-gpu", "unknown gpu"),
                           ("gpus_per_node", "0", "gpus_per_node 0"), ("name", None, "row without a name"),
                           ("name", "123", "name a number"), ("name", '"x\\ny"', "name holding a newline"),
                           ("matmul_efficiency_scale", "1e6", "matmul_efficiency_scale 1e6"),
                           ("nvlink_bandwidth_gbytes_per_s", "0", "nvlink 0 with domain 8"), ("bogus", "1", "unknown key")]:
        text = rows_with(key, raw)
        yield Case(kind, desc, lambda f, t=text: use(place(f, "o.yaml", t), f))
    two = yaml_list([OFFERING, with_value(OFFERING, "usd_per_gpu_hour", "9.5")])
    for desc, text in [("two offerings with the same name", two), ("a list of numbers", "- 1\n- 2\n"),
                       ("a mapping", yaml_text(OFFERING)), ("an empty list", "[]\n"),
                       ("a list holding a string", "- dgx-h100\n")]:
        yield Case(kind, desc, lambda f, t=text: use(place(f, "o.yaml", t), f))
    valid = yaml_list([OFFERING])
    for desc, content in hostile_files("yaml", valid, lambda raw: rows_with("network_bandwidth_gbits_per_s", raw),
                                       dup=valid + "  rdma: false\n", truncate=False):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "o.yaml", c), f))


H100_ROW_NAN = """
- name: bad-gpu
  generation: hopper
  memory_gib: .nan
  dense_tflops: {bf16: 989}
  hbm_bandwidth_gbytes_per_s: 3350
"""


def catalog_dir_cases() -> Iterator[Case]:
    kind = "catalog-dir"

    def with_catalog(change: Callable[[Path], None], argv: list[str]) -> Callable[[Path], Invocation]:
        def setup(folder: Path) -> Invocation:
            cat = copy_catalogs(folder)
            change(cat)
            return Invocation(list(argv), {"PLANNER_CATALOG_DIR": str(cat)})
        return setup

    def overwrite(name: str, content) -> Callable[[Path], None]:
        def change(cat: Path) -> None:
            target = cat / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            place(cat, name, content)
        return change

    def append(name: str, text: str) -> Callable[[Path], None]:
        def change(cat: Path) -> None:
            with open(cat / name, "a") as fh:
                fh.write(text)
        return change

    gpus = ["catalog", "gpus", "--json"]
    clusters = ["catalog", "clusters", "--json"]
    estimate = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "2", "--gbs", "64", "--json"]
    gpus_text = (CATALOGS / "gpus.yaml").read_text()
    h100_row = gpus_text[gpus_text.index("- name: h100-sxm-80gb"):gpus_text.index("- name: h100-pcie-80gb")]
    for desc, change, argv in [
        ("gpus.yaml a list of numbers", overwrite("gpus.yaml", "- 1\n- 2\n- 3\n"), gpus),
        ("gpus.yaml a list of numbers (estimate)", overwrite("gpus.yaml", "- 1\n- 2\n- 3\n"), estimate),
        ("gpus.yaml a mapping", overwrite("gpus.yaml", "h100: {memory_gib: 80}\n"), gpus),
        ("gpus.yaml empty", overwrite("gpus.yaml", ""), gpus),
        ("gpus.yaml a row with memory_gib .nan", append("gpus.yaml", H100_ROW_NAN), gpus),
        ("gpus.yaml a row whose name is a number", append("gpus.yaml", H100_ROW_NAN.replace("bad-gpu", "123")), gpus),
        ("gpus.yaml a row whose name holds a newline",
         append("gpus.yaml", H100_ROW_NAN.replace("bad-gpu", '"bad\\ngpu"').replace(".nan", "80")), gpus),
        ("gpus.yaml a row without fields", append("gpus.yaml", "\n- name: lonely\n"), gpus),
        ("gpus.yaml the same GPU twice", append("gpus.yaml", "\n" + h100_row.replace("memory_gib: 80", "memory_gib: 8")), gpus),
        ("gpus.yaml a key given twice in a row", append("gpus.yaml", H100_ROW_NAN.replace(".nan", "80")
                                                        + "  memory_gib: 81\n"), gpus),
        ("gpus.yaml is a folder", overwrite("gpus.yaml", FOLDER), gpus),
        ("gpus.yaml is a FIFO", overwrite("gpus.yaml", FIFO), gpus),
        ("gpus.yaml binary", overwrite("gpus.yaml", bytes(range(256)) * 8), gpus),
        ("gpus.yaml UTF-16", overwrite("gpus.yaml", gpus_text.encode("utf-16")), gpus),
        ("gpus.yaml nested 20,000 deep", overwrite("gpus.yaml", deep_flow("[", "]")), gpus),
        ("gpus.yaml over 16 MiB", overwrite("gpus.yaml", Big()), gpus),
        ("gpus.yaml missing", overwrite("gpus.yaml", MISSING), gpus),
        ("gpus.yaml a symlink loop", overwrite("gpus.yaml", LOOP), gpus),
        ("clusters.yaml a row with network .inf", append("clusters.yaml", "\n" + yaml_list([with_value(
            OFFERING, "network_bandwidth_gbits_per_s", ".inf")])), clusters),
        ("clusters.yaml a row naming an unknown GPU", append("clusters.yaml", "\n" + yaml_list([with_value(
            OFFERING, "gpu", "nonexistent-gpu")])), clusters),
        ("clusters.yaml a list of numbers", overwrite("clusters.yaml", "- 1\n- 2\n"), clusters),
        ("clusters.yaml a list of numbers (estimate)", overwrite("clusters.yaml", "- 1\n- 2\n"), estimate),
        ("clusters.yaml a row whose name holds a newline", append("clusters.yaml", "\n" + yaml_list([with_value(
            OFFERING, "name", '"x\\ny"')])), clusters),
        ("clusters.yaml the same cluster twice", append("clusters.yaml", "\n" + yaml_list([with_value(
            OFFERING, "name", "dgx-h100")])), clusters),
        ("clusters.yaml a row with gpus_per_node 0", append("clusters.yaml", "\n" + yaml_list([with_value(
            OFFERING, "gpus_per_node", "0")])), clusters),
        ("clusters.yaml empty", overwrite("clusters.yaml", ""), clusters),
        ("clusters.yaml nested 20,000 deep", overwrite("clusters.yaml", deep_flow("{a: ", "}")), clusters),
        ("models/ a model with num_layers: true", overwrite("models/llama3-8b.yaml", yaml_text(with_value(
            TINY_MODEL, "num_layers", "true"))), ["catalog", "models", "--json"]),
        ("models/ a model with num_layers: true (estimate)", overwrite("models/llama3-8b.yaml", yaml_text(with_value(
            TINY_MODEL, "num_layers", "true"))), estimate),
        ("models/ a model file that is binary", overwrite("models/llama3-8b.yaml", bytes(range(256)) * 4),
         ["catalog", "models", "--json"]),
        ("models/x.yaml is a folder", overwrite("models/x.yaml", FOLDER), ["catalog", "models", "--json"]),
        ("models is a file, not a folder", overwrite("models", "name: x\n"), ["catalog", "models"]),
    ]:
        yield Case(kind, desc, with_catalog(change, argv))
    yield Case(kind, "PLANNER_CATALOG_DIR a missing folder",
               lambda f: Invocation(list(gpus), {"PLANNER_CATALOG_DIR": str(f / "nowhere")}))
    yield Case(kind, "PLANNER_CATALOG_DIR a file",
               lambda f: Invocation(list(gpus), {"PLANNER_CATALOG_DIR": str(f / place(f, "afile", "x\n"))}))
    yield Case(kind, "PLANNER_CATALOG_DIR /dev/null",
               lambda f: Invocation(list(clusters), {"PLANNER_CATALOG_DIR": "/dev/null"}))
    yield Case(kind, "PLANNER_CATALOG_DIR a missing folder (estimate)",
               lambda f: Invocation(list(estimate), {"PLANNER_CATALOG_DIR": str(f / "nowhere")}))


def run_cases() -> Iterator[Case]:
    kind = "runs"

    def use(path: str, folder: Path) -> Invocation:
        return Invocation(["validate", "--runs", path, "--json"])

    muts = [("measured.step_time_s", v, f"measured.step_time_s {d}") for v, d in
            [(".nan", ".nan"), (".inf", ".inf"), ("-1", "negative"), ("0", "0"), ('"fast"', "a string"),
             ("1e-300", "1e-300 s")]]
    muts += [("measured.step_time_kind", '"guess"', "step_time_kind guess"),
             ("measured.peak_memory_gib", ".inf", "peak_memory_gib .inf"), ("measured.peak_memory_gib", "-1", "peak_memory_gib negative"),
             ("id", "123", "id a number"), ("id", None, "id missing"), ("group", '"megatron-2021\\nx"', "group holding a newline"),
             ("plan.tp", "0", "plan.tp 0"), ("plan.dp", "3", "plan.dp 3 on 32 GPUs"), ("cluster.gpu", "nonexistent-gpu", "unknown gpu"),
             ("model.num_layers", "true", "model.num_layers true"), ("model.hidden_size", ".nan", "model.hidden_size .nan"),
             ("bogus", "1", "unknown key"), ("exclude", "5", "exclude a number"), ("measured", None, "measured missing")]
    for key, raw, desc in muts:
        text = yaml_list([with_value(RUN, key, raw)])
        yield Case(kind, desc, lambda f, t=text: use(place(f, "runs.yaml", t), f))
    yield Case(kind, "measured.step_time_s .inf (table)",
               lambda f: Invocation(["validate", "--runs", place(f, "runs.yaml", yaml_list([with_value(
                   RUN, "measured.step_time_s", ".inf")]))]))
    yield Case(kind, "the same id twice", lambda f: use(place(f, "runs.yaml", yaml_list([RUN, RUN])), f))
    for desc, text in [("a list of numbers", "- 1\n- 2\n"), ("an empty list", "[]\n"), ("a mapping", yaml_text(RUN)),
                       ("a list holding a string", "- megatron-t1-1.7b\n")]:
        yield Case(kind, desc, lambda f, t=text: use(place(f, "runs.yaml", t), f))
    valid = yaml_list([RUN])
    for desc, content in hostile_files("yaml", valid, lambda raw: yaml_list([with_value(RUN, "plan.tp", raw)]),
                                       dup=valid + "  group: other\n"):
        yield Case(kind, desc, lambda f, c=content: use(place(f, "runs.yaml", c), f))


def control_cases() -> Iterator[Case]:
    kind = "control"

    def files(*pairs) -> Callable[[Path], None]:
        def write(folder: Path) -> None:
            for name, text in pairs:
                place(folder, name, text)
        return write

    tiny = ("m.yaml", yaml_text(TINY_MODEL))
    box = ("c.yaml", yaml_text(BOX_CLUSTER))
    inline = ("ci.yaml", yaml_text(INLINE_CLUSTER))
    hf = ("tiny-hf/config.json", hf_json(HF_CONFIG))
    yield _argv(kind, "estimate llama3-70b dgx-h100 --gpus 64 --tp 8 --pp 4 --gbs 512 --json",
                ["estimate", "llama3-70b", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "4", "--gbs", "512", "--json"], True)
    yield _argv(kind, "estimate base plan A --json", list(ESTIMATE_BASE), True)
    yield _argv(kind, "estimate tiny model file on dgx-h100", ["estimate", "m.yaml", "dgx-h100", *ESTIMATE_8], True, before=files(tiny))
    yield _argv(kind, "estimate tiny model on cluster file", ["estimate", "m.yaml", "c.yaml", "--json"], True, before=files(tiny, box))
    yield _argv(kind, "estimate tiny model on cluster file (suggest)", ["suggest", "m.yaml", "c.yaml", "--top", "1", "--json"],
                True, before=files(tiny, box))
    yield _argv(kind, "estimate tiny model on inline-GPU cluster", ["estimate", "m.yaml", "ci.yaml", "--json"], True,
                before=files(tiny, inline))
    yield _argv(kind, "estimate HF config.json", ["estimate", "tiny-hf/config.json", "dgx-h100", "--gpus", "8", "--gbs", "16",
                                                  "--seq-length", "1024", "--json"], True, before=files(hf))
    yield _argv(kind, "estimate HF config.json without --seq-length", ["estimate", "tiny-hf/config.json", "dgx-h100", "--gpus",
                                                                       "8", "--gbs", "16", "--json"], before=files(hf))
    yield _argv(kind, "estimate with what-ifs", [*ESTIMATE_BASE, "--what-if=network=0.5", "--what-if=price.h100-sxm-80gb=2.10",
                                                 "--what-if=rdma=false", "--what-if=power=500"], True)
    yield _argv(kind, "estimate table output", [a for a in ESTIMATE_BASE if a != "--json"], True)
    yield _argv(kind, "suggest base --json", list(SUGGEST_BASE), True)
    yield _argv(kind, "suggest --fix tp=2 --fix zero=1 --json", [*SUGGEST_BASE, "--fix=tp=2", "--fix=zero=1"], True)
    yield _argv(kind, "suggest --what-if-grid network=0.5,1.0 --json", [*SUGGEST_BASE, "--what-if-grid=network=0.5,1.0"], True)
    yield _argv(kind, "size base --json", list(SIZE_BASE), True)
    yield _argv(kind, "size --prices FILE --json", [*SIZE_BASE, "--prices=p.yaml"], True,
                before=files(("p.yaml", "h100-sxm-80gb: 2.0\n")))
    yield _argv(kind, "size --catalog FILE --json", ["size", "llama3-8b", "--tokens", "1e10", "--gbs", "64", "--max-gpus",
                                                     "16", "--workers", "1", "--json", "--catalog=o.yaml"], True,
                before=files(("o.yaml", yaml_list([OFFERING]))))
    yield _argv(kind, "compare A B --json", ["compare", "a.json", "b.json", "--json"], True, before=write_plans)
    yield _argv(kind, "compare A B (table)", ["compare", "a.json", "b.json"], True, before=write_plans)
    yield _argv(kind, "emit A --format megatron", ["emit", "a.json", "--format", "megatron", "--out", "out"], True,
                before=write_plans)
    yield Case(kind, "emit - (stdin) --format megatron",
               lambda f: Invocation(["emit", "-", "--format", "megatron", "--out", "out"], {},
                                    json.dumps(scored(*PLAN_A)).encode()), True)
    yield _argv(kind, "calibrate dgx-h100 --nccl example log --json", ["calibrate", "dgx-h100", "--nccl", str(NCCL_EXAMPLE),
                                                                      "--json"], True)
    yield Case(kind, "calibrate dgx-h100 --nccl -J JSON log --json",
               lambda f: Invocation(["calibrate", "dgx-h100", "--nccl", place(f, "all_reduce_perf.json",
                                                                                 json.dumps(nccl_json_doc())), "--json"]), True)
    yield _argv(kind, "calibrate tiny cluster file --nccl --out", ["calibrate", "c.yaml", "--nccl", str(NCCL_EXAMPLE),
                                                                   "--out", "cal.yaml", "--json"], True, before=files(box))
    yield _argv(kind, "calibrate --step-times CSV --json", ["calibrate", "dgx-h100", "--step-times", "s.csv", "--json"], True,
                before=files(("s.csv", csv_text(STEP_COLUMNS, STEP_ROWS))))
    yield _argv(kind, "calibrate --step-times YAML --json", ["calibrate", "dgx-h100", "--step-times", "s.yaml", "--json"], True,
                before=files(("s.yaml", yaml_list([dict(zip(STEP_COLUMNS, r)) for r in STEP_ROWS]))))
    yield _argv(kind, "validate --runs FILE --json", ["validate", "--runs", "runs.yaml", "--json"], True,
                before=files(("runs.yaml", yaml_list([RUN]))))
    yield _argv(kind, "validate --group bloom --json", ["validate", "--group", "bloom", "--json"], True)
    yield _argv(kind, "catalog gpus --json", ["catalog", "gpus", "--json"], True)
    yield _argv(kind, "catalog clusters", ["catalog", "clusters"], True)
    yield _argv(kind, "catalog models --json", ["catalog", "models", "--json"], True)
    yield Case(kind, "PLANNER_CATALOG_DIR a copy of the catalogs: catalog gpus --json",
               lambda f: Invocation(["catalog", "gpus", "--json"], {"PLANNER_CATALOG_DIR": str(copy_catalogs(f))}), True)
    yield Case(kind, "PLANNER_CATALOG_DIR a copy of the catalogs: estimate",
               lambda f: Invocation(list(ESTIMATE_BASE), {"PLANNER_CATALOG_DIR": str(copy_catalogs(f))}), True)


HUGE_MODEL = {"name": "huge", "num_layers": "4096", "hidden_size": "262144", "num_attention_heads": "16384",
              "vocab_size": "16777216", "seq_length": "16777216", "global_batch_size": "16777216",
              "training_tokens": "1e17"}
EXTREME_GPU = {"name": "extreme", "generation": "other", "memory_gib": "4096",
               "dense_tflops": {"bf16": "100000", "fp8": "100000"}, "hbm_bandwidth_gbytes_per_s": "100000",
               "nvlink_bandwidth_gbytes_per_s": "10000", "tdp_watts": "100000",
               "measured_matmul_bf16_tflops": "80000"}  # generation other: no generation's rate to take


def extreme_cases() -> Iterator[Case]:
    """Inputs at the documented limits (planner/inputs/limits.py): any answer but a crash, a hang, non-strict
    JSON or a multi-line error is acceptable."""
    kind = "extreme"

    def with_files(argv: list[str], *files: tuple[str, str]) -> Callable[[Path], Invocation]:
        def setup(folder: Path) -> Invocation:
            for name, text in files:
                place(folder, name, text)
            return Invocation(list(argv))
        return setup

    huge = ("huge.yaml", yaml_text(HUGE_MODEL))
    big_box = ("big.yaml", yaml_text({**BOX_CLUSTER, "name": "big", "gpu": EXTREME_GPU, "num_gpus": "1048576",
                                      "gpus_per_node": "1024", "nvlink_domain_size": "1024",
                                      "network_bandwidth_gbits_per_s": "100000", "network_latency_us": "1000000",
                                      "nvlink_latency_us": "1000000", "usd_per_gpu_hour": "1000"}))
    for desc, argv, files in [
        ("estimate: a model at every shape limit on 1,048,576 GPUs", ["estimate", "huge.yaml", "dgx-h100", "--gpus",
                                                                      "1048576", "--tp", "8", "--pp", "4096", "--json"], [huge]),
        ("estimate: the same, table output", ["estimate", "huge.yaml", "dgx-h100", "--gpus", "1048576", "--tp", "8",
                                              "--pp", "4096"], [huge]),
        ("estimate: llama3-8b with --seq-length 16777216 on one GPU", ["estimate", "llama3-8b", "dgx-h100", "--gpus", "1",
                                                                       "--seq-length", "16777216", "--gbs", "1", "--json"], []),
        ("estimate: a cluster at every limit", ["estimate", "huge.yaml", "big.yaml", "--tp", "1024", "--pp", "1024",
                                                "--json"], [huge, big_box]),
        ("estimate: what-ifs at their limits", [*ESTIMATE_BASE, "--what-if=network=0.001", "--what-if=nvlink=0.001",
                                                "--what-if=hbm=0.001", "--what-if=matmul_efficiency=0.001",
                                                "--what-if=price.h100-sxm-80gb=1000", "--what-if=power=1"], []),
        ("suggest: llama3-8b on 1,048,576 GPUs, gbs 16777216", ["suggest", "llama3-8b", "dgx-h100", "--gpus", "1048576",
                                                                "--gbs", "16777216", "--top", "1", "--json"], []),
        ("suggest: a model at every shape limit on 1,048,576 GPUs", ["suggest", "huge.yaml", "dgx-h100", "--gpus",
                                                                     "1048576", "--top", "1", "--json"], [huge]),
        ("suggest: a model at every shape limit on a cluster at every limit", ["suggest", "huge.yaml", "big.yaml",
                                                                               "--top", "1", "--json"], [huge, big_box]),
        ("size: a model at every shape limit, --max-gpus 1048576", ["size", "huge.yaml", "--max-gpus", "1048576",
                                                                    "--gpu-types", "h100-sxm-80gb", "--workers", "1",
                                                                    "--json"], [huge]),
        ("size: llama3-8b, --max-gpus 1048576, no deadline", ["size", "llama3-8b", "--tokens", "1e17", "--gbs", "16777216",
                                                              "--max-gpus", "1048576", "--gpu-types", "h100-sxm-80gb",
                                                              "--workers", "1", "--json"], []),
    ]:
        yield Case(kind, desc, with_files(argv, *files), either=True, timeout_s=EXTREME_TIMEOUT_S)


def cases() -> list[Case]:
    """Every case, controls first, in a fixed order."""
    out: list[Case] = []
    for family in (control_cases, model_cases, cluster_cases, hf_cases, plan_cases, flag_cases, what_if_cases,
                   nccl_cases, step_time_cases, price_cases, size_catalog_cases, catalog_dir_cases, run_cases,
                   extreme_cases):
        out += list(family())
    return out
