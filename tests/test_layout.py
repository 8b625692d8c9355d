"""The folder tree is the architecture: imports point down the rooms of README's map, never in a circle,
and costmodel/ imports only the standard library."""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Bottom floor first; a module may import only from its own room or rooms on lower floors.
FLOORS = [
    ["costmodel", "planner"],  # planner/__init__.py holds only the version
    ["planner.errors"],
    ["planner.files"],
    ["planner.inputs"],
    ["planner.frameworks"],
    ["planner.analysis"],
    ["planner.search", "planner.validation", "planner.calibration"],
    ["planner.sizing", "planner.emit"],
    ["planner.render"],
    ["planner.commands"],
    ["planner.__main__"],
]
FLOOR = {room: i for i, rooms in enumerate(FLOORS) for room in rooms}


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def room_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "costmodel":
        return "costmodel"
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def imports(path: Path) -> list[str]:
    """Every module imported anywhere in the file (functions included), absolute."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                is_module = (ROOT / Path(*sub.split("."))).with_suffix(".py").exists() or \
                    (ROOT / Path(*sub.split("."))).is_dir()
                out.append(sub if is_module else base)
    return out


def sources() -> list[Path]:
    return sorted((ROOT / "planner").rglob("*.py")) + sorted((ROOT / "costmodel").rglob("*.py"))


def test_every_room_is_on_a_floor():
    rooms = {room_of(module_of(p)) for p in sources()}
    assert rooms <= set(FLOOR), rooms - set(FLOOR)


def test_imports_point_down_the_floors():
    upward = []
    for path in sources():
        here = room_of(module_of(path))
        for target in imports(path):
            if target.split(".")[0] not in ("planner", "costmodel"):
                continue
            there = room_of(target)
            if there != here and FLOOR[there] >= FLOOR[here]:
                upward.append(f"{module_of(path)} -> {target}")
    assert not upward, upward


def test_no_import_circle_between_modules():
    graph = defaultdict(set)
    for path in sources():
        graph[module_of(path)] |= {t for t in imports(path) if t.split(".")[0] in ("planner", "costmodel")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            assert state.get(nxt) != 1, " -> ".join(trail + [nxt])
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in list(graph):
        if node not in state:
            visit(node, [node])


def test_costmodel_imports_only_the_standard_library():
    for path in sorted((ROOT / "costmodel").rglob("*.py")):
        for target in imports(path):
            top = target.split(".")[0]
            assert top == "costmodel" or top in sys.stdlib_module_names or top == "__future__", (path.name, target)
