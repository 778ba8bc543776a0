"""The package's layering: no import cycle among pcd's modules, and the lower layers never import
the upper ones (core -> problems/methods -> engine/train/jobs -> experiments/studio -> viz ->
ui/cli), not even lazily inside a function.

For cycles only module-level imports count (an import inside a function runs after every module
has loaded); the implicit import of a parent package is never an edge."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "pcd"


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, mod: str, is_pkg: bool, lazy: bool = False) -> set[str]:
    found: set[str] = set()

    def visit(body):
        for node in body:
            if lazy:
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)) and sub is not node:
                        visit([sub])
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative import
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                found.add(name)
                found.update(f"{name}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return found


@functools.cache
def graph(lazy: bool = False) -> dict[str, frozenset[str]]:
    g: dict[str, frozenset[str]] = {}
    for mod, path in MODULES.items():
        names = _imports(ast.parse(path.read_text()), mod, path.name == "__init__.py", lazy)
        g[mod] = frozenset(n for n in names if n in MODULES and n != mod)
    return g


def _cycle(g) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(g[u]):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                c = dfs(v)
                if c:
                    return c
        state[u] = 2
        stack.pop()
        return None

    for u in sorted(g):
        if u not in state:
            c = dfs(u)
            if c:
                return c
    return None


def test_no_import_cycle_in_pcd():
    assert _cycle(graph()) is None, " -> ".join(_cycle(graph()) or [])


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


# layer of each top-level area; a module may import its own layer or lower ones only
LAYERS = {
    "pcd._version": 0, "pcd._validate": 0, "pcd._files": 0, "pcd._json": 0, "pcd._fast": 0, "pcd.qp": 0, "pcd.normalize": 0, "pcd.direction": 0,
    "pcd.problems": 1, "pcd.methods": 1,
    "pcd._kernels": 0, "pcd._fastpath": 2, "pcd.optim": 2, "pcd.engine": 2, "pcd.train": 2, "pcd.monitor": 2, "pcd.frontend": 2, "pcd.jobs": 2,
    "pcd.experiments": 3,
    "pcd.viz": 4,
    "pcd.ui": 5, "pcd.cli": 5, "pcd.__main__": 5,
    "pcd.studio": 5,  # the pages' data modules: Streamlit caches of experiments + viz figures (pcd.ui.chart.frozen)
}


# Known exceptions, each with its reason (keep this list short).
ALLOWED_UP: set[tuple[str, str]] = set()


def _layer(mod: str) -> int | None:
    best = None
    for prefix, layer in LAYERS.items():
        if mod == prefix or mod.startswith(prefix + "."):
            best = layer
    return best


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if m != "pcd"))
def test_no_upward_import(mod):
    here = _layer(mod)
    assert here is not None, f"{mod}: add its area to LAYERS"
    up = sorted(dep for dep in graph(lazy=True)[mod]
                if dep != "pcd" and (_layer(dep) or 0) > here and (mod, dep) not in ALLOWED_UP)
    assert not up, f"{mod} (layer {here}) imports upper-layer modules {up}"
