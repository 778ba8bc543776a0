"""The package's layering: no import cycle among pcd's modules, and the lower layers never import
the upper ones, not even lazily inside a function (nor under ``TYPE_CHECKING``):

    core -> problems, methods -> engine -> jobs -> train -> experiments -> viz
         -> page data modules (pcd/studio/) -> ui, cli

plus areas kept apart although one sits above the other (:data:`APART`): the figure builders
(``viz``) import neither the training code nor the run queue (a figure takes plain data). The run
queue (``jobs``) sits below training: it knows a runner and a config check only as what it is
handed. The page data modules (``pcd/studio/``) sit above ``viz``: a figure builder
never reaches into a page's data module (the engine records what a figure needs).

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
    # the core: framework-free maths and the one reader / validator
    "pcd._version": 0, "pcd._validate": 0, "pcd._files": 0, "pcd._json": 0, "pcd._fast": 0, "pcd.qp": 0,
    "pcd.normalize": 0, "pcd.direction": 0, "pcd._kernels": 0,
    "pcd._workers": 0,  # worker processes: imports no pcd module (a call names its function)
    "pcd.problems": 1, "pcd.methods": 1,
    "pcd._fastpath": 2, "pcd.optim": 2, "pcd.engine": 2,
    "pcd.jobs": 3,                                          # a generic run queue: never imports train
    "pcd.train": 4, "pcd.monitor": 4, "pcd.frontend": 4,    # the pruning runs and their torch tools
    "pcd.experiments": 5,
    "pcd.viz": 6,                                           # figure builders: plain data in, figures out
    "pcd.studio": 7,                                        # the pages' data modules (pcd/studio/)
    "pcd.ui": 8, "pcd.cli": 8, "pcd.__main__": 8,
}

# Areas that never import each other's modules although one sits above the other.
APART = {
    ("pcd.viz", "pcd.train"),  # figures take plain data: the training code is not theirs to call
    ("pcd.viz", "pcd.jobs"),   # nor the run queue
}


# Known exceptions, each with its reason (keep this list short; a stale one fails the test).
ALLOWED_UP: set[tuple[str, str]] = set()


def _layer(mod: str) -> int | None:
    best = None
    for prefix, layer in LAYERS.items():
        if mod == prefix or mod.startswith(prefix + "."):
            best = layer
    return best


def _area(mod: str) -> str | None:
    best = None
    for prefix in LAYERS:
        if (mod == prefix or mod.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def _forbidden(mod: str, dep: str) -> bool:
    """True when ``mod`` may not import ``dep``: ``dep`` sits in a higher layer, or the two areas are
    kept apart (:data:`APART`); the known exceptions (:data:`ALLOWED_UP`) are allowed."""
    if dep == "pcd" or (mod, dep) in ALLOWED_UP:
        return False
    return (_layer(dep) or 0) > (_layer(mod) or 0) or (_area(mod), _area(dep)) in APART


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if m != "pcd"))
def test_no_upward_import(mod):
    here = _layer(mod)
    assert here is not None, f"{mod}: add its area to LAYERS"
    bad = sorted(dep for dep in graph(lazy=True)[mod] if _forbidden(mod, dep))
    assert not bad, f"{mod} (layer {here}, {_area(mod)}) imports {bad}: upper-layer or kept-apart modules"


def test_every_exception_is_still_needed():
    stale = sorted(pair for pair in ALLOWED_UP if pair[0] not in MODULES or pair[1] not in graph(lazy=True)[pair[0]])
    assert not stale, f"these ALLOWED_UP exceptions no longer occur: delete them from tests/test_import_graph.py: {stale}"


@pytest.mark.parametrize("mod,dep", [
    ("pcd.jobs.store", "pcd.train.catalog"),     # the queue checking a training config itself
    ("pcd.jobs", "pcd.train.run"),
    ("pcd.jobs.queue_view", "pcd.train.studies"),
    ("pcd.viz.theme", "pcd.train.catalog"),      # a figure reaching into the training code
    ("pcd.viz.runs", "pcd.jobs.store"),          # ... or the run queue
    ("pcd.viz.landscape", "pcd.studio.lesson"),  # ... or a page's data module
    ("pcd.viz.basin", "pcd.studio"),
    ("pcd.viz.basin", "pcd.studio.basin"),       # the page data package (pcd/studio/)
    ("pcd.engine", "pcd.viz.theme"),
])
def test_the_forbidden_edges_of_issue_26_would_fail(mod, dep):
    assert _forbidden(mod, dep)


@pytest.mark.parametrize("mod,dep", [
    ("pcd.train.studies", "pcd.jobs.store"),     # training reads the queue's store
    ("pcd.studio", "pcd.viz.theme"),             # a page data module reads the figures' words and colours
    ("pcd.viz.basin", "pcd.engine"),
    ("pcd.viz.kbench", "pcd.experiments.kdw_law"),
    ("pcd.ui.chart", "pcd.studio.basin"),
])
def test_the_allowed_edges_stay_allowed(mod, dep):
    assert not _forbidden(mod, dep)


def test_figure_colours_have_one_home():
    """Every colour a figure draws is named in pcd/viz/theme.py; the other figure builders use the names
    (the words of the outcomes have theirs in pcd.engine)."""
    import re

    hexes = {p.name: re.findall(r"#[0-9a-fA-F]{6}\b", p.read_text())
             for p in sorted((ROOT / "viz").glob("*.py")) if p.name != "theme.py"}
    assert not {k: v for k, v in hexes.items() if v}, "hex colours outside pcd/viz/theme.py"
