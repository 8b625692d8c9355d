"""Reading user files and turning them into validated specs; every failure is one PlannerError line.

What is read must be a regular file (not a folder, FIFO or device) of at most MAX_FILE_BYTES of
UTF-8 text, nested at most MAX_NESTING deep, with no key given twice; YAML scalars resolve by the YAML 1.2 core
schema (`2e12` is a number, `020` is twenty, `yes` is a string), and JSON's NaN and Infinity are
refused. Checks run before parsing, so no input can exhaust memory or the parser's recursion.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from planner.errors import PlannerError
from planner.inputs.limits import MAX_FILE_BYTES, MAX_NESTING


def read_text(path: Path | str, limit: int = MAX_FILE_BYTES, lenient: bool = False) -> str:
    """The UTF-8 text of a regular file (or '-', stdin) of at most `limit` bytes; `lenient` replaces
    undecodable bytes (tool logs) instead of refusing them."""
    if str(path) == "-":
        import sys

        raw = sys.stdin.buffer.read(limit + 1)
        return _decode(raw, "stdin", limit, lenient)
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise PlannerError(f"{path}: no such file") from None
    except OSError as exc:
        raise PlannerError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise PlannerError(f"{path}: is a folder, expected a file")
    if not stat.S_ISREG(info.st_mode):
        raise PlannerError(f"{path}: not a regular file (a device, FIFO or socket)")
    if info.st_size > limit:
        raise PlannerError(f"{path}: {info.st_size:,} bytes, over the {limit // 2**20} MiB input limit")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise PlannerError(f"{path}: cannot read ({exc.strerror})") from None
    return _decode(raw, str(path), limit, lenient)


def _decode(raw: bytes, where: str, limit: int, lenient: bool = False) -> str:
    if len(raw) > limit:
        raise PlannerError(f"{where}: over the {limit // 2**20} MiB input limit")
    if lenient:
        return raw.replace(b"\x00", b"").decode("utf-8", errors="replace")
    if b"\x00" in raw:
        raise PlannerError(f"{where}: binary data, expected UTF-8 text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PlannerError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting ([ and {, outside quoted strings) or block indentation level: an upper
    bound on how deep a YAML or JSON parser will recurse."""
    depth = deepest = 0
    quote = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "\n":
            quote = None if quote == "'" else quote
    return max(deepest, _indent_levels(text))


def _indent_levels(text: str) -> int:
    """Deepest stack of strictly increasing indentation (YAML block nesting), list dashes counted as indentation."""
    stack = [0]
    deepest = 0
    for line in text.splitlines():
        stripped = line.lstrip(" -")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        while stack and indent < stack[-1]:
            stack.pop()
        if not stack or indent > stack[-1]:
            stack.append(indent)
        deepest = max(deepest, len(stack) - 1)
    return deepest


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader (LibYAML's parser where PyYAML has it) that refuses a key given twice and resolves
    plain scalars by the YAML 1.2 core schema (yaml.org/spec/1.2.2, 10.3.2) instead of PyYAML's 1.1
    rules: `1e3` and `.5` are floats; `020` is twenty, not octal sixteen; `1_000`, `1:30`, `yes`, `on`
    and `n` are strings, not numbers or booleans (which a count or a switch then refuses)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(None, None, "a key must be a scalar", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        """A 1.2 integer: decimal (leading zeros allowed), 0o octal or 0x hexadecimal."""
        text = self.construct_scalar(node)
        base = {"0o": 8, "0x": 16}.get(text[:2], 10)
        return int(text[2:] if base != 10 else text, base)


# The YAML 1.2 core schema's tags for plain scalars, each with the first characters it can start with.
_CORE_SCHEMA = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+0123456789."),
]
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _firsts in _CORE_SCHEMA:  # ints before floats: the first match wins ("8" is an int)
    _StrictLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_firsts))
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


def _json_pairs(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice")
        out[key] = value
    return out


def _json_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_text(text: str, where: str, as_json: bool) -> Any:
    """Parse YAML or JSON text with the checks of the module docstring."""
    kind = "JSON" if as_json else "YAML"
    depth = nesting_depth(text)
    if depth > MAX_NESTING:
        raise PlannerError(f"{where}: nested {depth} deep, over the limit of {MAX_NESTING}")
    try:
        if as_json:
            return json.loads(text, object_pairs_hook=_json_pairs, parse_constant=_json_constant)
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else (f" at line {exc.lineno}" if hasattr(exc, "lineno") else "")
        problem = getattr(exc, "problem", None) or (str(exc).split(":")[0] if isinstance(exc, ValueError) else "")
        detail = f": {problem}" if problem and not isinstance(exc, json.JSONDecodeError) else ""
        raise PlannerError(f"{where}: not valid {kind}{line}{detail}") from None


def read_data(path: Path) -> Any:
    """Parse a YAML or JSON file (JSON by its .json suffix)."""
    return parse_text(read_text(path), str(path), Path(path).suffix.lower() == ".json")


def _fields_at(spec_cls, loc: tuple) -> list[str]:
    """Field names of the (nested) spec model that `loc` points into, for 'did you mean' hints."""
    cls = spec_cls
    for part in loc[:-1]:
        field = getattr(cls, "model_fields", {}).get(part) if isinstance(part, str) else None
        if field is None:
            return list(getattr(cls, "model_fields", {})) if part in ("GpuSpec", "ModelSpec") else []
        cls = next((a for a in getattr(field.annotation, "__args__", (field.annotation,))
                    if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if cls is None:
            return []
    return list(getattr(cls, "model_fields", {}))


def _pydantic_tag(part) -> bool:
    return isinstance(part, str) and (part.startswith(("constrained-", "function-", "lax-or-strict", "json-or-python"))
                                      or "[" in part)


def describe_validation_error(err: ValidationError, what: str, spec_cls=None) -> str:
    """One line: every unknown key with its closest known key, else the most specific error as
    'what: field.path: message'. For a field that takes either a name or a mapping (a cluster's
    `gpu`), pydantic reports one error per alternative, tagged with the alternative's type; the
    deepest one names the field the user got wrong, and the tags are dropped from the path."""
    tags = {"str", "int", "float", "bool", "GpuSpec", "ModelSpec", "ClusterSpec", "PlanSpec"}

    def path(loc) -> str:  # pydantic's own tags ("constrained-str", "function-after[...]") are not keys
        return ".".join(str(p) for p in loc if p not in tags and not _pydantic_tag(p)) or "(top level)"

    unknown = [e for e in err.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        parts = []
        for e in unknown:
            known = _fields_at(spec_cls, e["loc"]) if spec_cls else []
            close = difflib.get_close_matches(str(e["loc"][-1]), known, n=1, cutoff=0.5)
            parts.append(path(e["loc"]) + (f" (did you mean {close[0]}?)" if close else ""))
        return f"{what}: unknown key{'s' if len(parts) > 1 else ''}: {', '.join(parts)}"
    # deepest first; at equal depth a mapping's own check (a name-or-mapping field given a mapping) over the
    # alternatives' "should be a string" / "should be a mapping"
    alternative = {"string_type", "model_type", "model_attributes_type", "dict_type"}
    first = max(err.errors(), key=lambda e: (len(e["loc"]), e["type"] not in alternative))
    msg = "required key is missing" if first["type"] == "missing" else first["msg"].removeprefix("Value error, ")
    extra = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{what}: {path(first['loc'])}: {msg}{extra}"


def parse(spec_cls, data: Any, what: str):
    if not isinstance(data, dict):
        raise PlannerError(f"{what}: expected a mapping of keys to values")
    try:
        return spec_cls.model_validate(data)
    except ValidationError as err:
        raise PlannerError(describe_validation_error(err, what, spec_cls)) from None


def unknown_name(kind: str, name: str, known: list[str]) -> PlannerError:
    """One line naming the unknown `name` and the known ones closest to it: those that contain it, whatever its
    case ('H100': h100-sxm-80gb, ...), then difflib's."""
    low = name.lower()
    containing = sorted(k for k in known if low and low in k.lower())
    close = list(dict.fromkeys(containing + difflib.get_close_matches(name, known, n=3, cutoff=0.4)))[:3]
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(known))}"
    shown = name if len(name) <= 64 and name.isprintable() else repr(name[:64])
    return PlannerError(f"unknown {kind} '{shown}'{hint}")
