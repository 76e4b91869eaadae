"""The house's rules, checked: no hand-written module over 400 lines, no import cycle among jackpotd's modules
(imports under TYPE_CHECKING count), and no driver imported above store/."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ("gen",)  # jackpotd/api/gen: made by scripts/gen_proto.py
DRIVERS = {"redis", "hiredis", "asyncpg"}


def _hand_written(*tops: str) -> Iterator[Path]:
    for top in tops:
        for path in sorted((ROOT / top).rglob("*.py")):
            if not any(part in GENERATED for part in path.relative_to(ROOT).parts):
                yield path


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> Iterator[str]:
    """The jackpotd modules (or packages) `path` imports, anywhere in it."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # `from P import x`: the module P.x when x is one, else P itself (x is a name P defines)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_among_jackpotd_modules() -> None:
    paths = list(_hand_written("jackpotd"))
    modules = {_module(p) for p in paths}
    graph = {_module(p): set(_imports(p, modules)) for p in paths}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("top", ["jackpotd", "clients", "chaos"])
def test_no_hand_written_module_over_400_lines(top: str) -> None:
    long = {str(p.relative_to(ROOT)): n for p in _hand_written(top) if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_only_the_store_imports_a_driver() -> None:
    outside = [str(p.relative_to(ROOT)) for p in _hand_written("jackpotd")
               if "store" not in p.relative_to(ROOT).parts and "embedded" not in p.relative_to(ROOT).parts
               and any(isinstance(n, ast.Import | ast.ImportFrom)
                       and {(a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
                            for a in n.names} & DRIVERS
                       for n in ast.walk(ast.parse(p.read_text())))]
    assert outside == []
