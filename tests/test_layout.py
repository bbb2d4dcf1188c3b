"""The package's layout: a short top level, small modules, no import circle between packages, and the
bench a plug-in the core runs without (ARCHITECTURE.md).

Imports are read from the syntax tree, every one of them: at module level, inside functions and under
TYPE_CHECKING, so a lazy import cannot hide a circle.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kernelevolve"
MAX_TOP_LEVEL_MODULES = 10
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """Every kernelevolve module `name` imports (a package where the import names the package)."""
    path = MODULES[name]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (path.name == "__init__.py")]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target.startswith("kernelevolve"):
                found.add(target)
    return found


IMPORTS = {name: _imports(name) for name in MODULES}


def _part(name: str, package: str) -> str | None:
    """The child of `package` that holds module `name` (None outside it, or for the package itself)."""
    prefix = package + "."
    return prefix + name[len(prefix) :].split(".")[0] if name.startswith(prefix) else None


def _circles(package: str) -> list[list[str]]:
    """Strongly connected groups of more than one part among `package`'s children (modules and
    subpackages) that hold a subpackage: an import circle between packages."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, targets in IMPORTS.items():
        source = _part(name, package)
        for target in targets:
            part = _part(target, package)
            if source and part and part != source:
                edges[source].add(part)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            groups.append(sorted(group))

    for node in list(edges):
        if node not in index:
            visit(node)
    packages = {n for n, p in MODULES.items() if p.name == "__init__.py"}
    return [g for g in groups if len(g) > 1 and any(member in packages for member in g)]


def test_the_top_level_is_short() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_is_long() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.parametrize("package", sorted(n for n, p in MODULES.items() if p.name == "__init__.py"))
def test_no_import_circle_between_packages(package: str) -> None:
    assert _circles(package) == []


def test_nothing_outside_the_bench_imports_it() -> None:
    reaches = {
        name: sorted(t for t in targets if t.startswith("kernelevolve.bench"))
        for name, targets in IMPORTS.items()
        if not name.startswith("kernelevolve.bench")
    }
    assert {name: targets for name, targets in reaches.items() if targets} == {}


# A Python started with this folder on PYTHONPATH cannot import the bench, nor can any Python it starts
# (the harness's workers and runners inherit the environment).
_BLOCKER = """
import importlib.abc
import sys


class _NoBench(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "kernelevolve.bench" or name.startswith("kernelevolve.bench."):
            raise ImportError(f"No module named {name!r} (blocked: the core must run without the bench)")
        return None


sys.meta_path.insert(0, _NoBench())
"""

_IMPORT_THE_CORE = """
import importlib
import pkgutil

import kernelevolve

names = [m.name for m in pkgutil.walk_packages(kernelevolve.__path__, "kernelevolve.")]
core = [n for n in names if not n.startswith("kernelevolve.bench")]
for name in core:
    importlib.import_module(name)
try:
    importlib.import_module("kernelevolve.bench")
except ImportError:
    print(f"imported {len(core)} core modules without the bench")
"""

_FAST = [
    "platform.eval.measure_compile_baseline=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "progress=false",
    "kb.enabled=false",
    "search.termination.max_evaluations=2",
]


@pytest.mark.slow
def test_the_core_runs_without_the_bench(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(textwrap.dedent(_BLOCKER))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")])),
    }

    def python(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
        )

    imported = python("-c", _IMPORT_THE_CORE)
    assert imported.returncode == 0, imported.stderr
    assert "without the bench" in imported.stdout

    search = python("-m", "kernelevolve", "+spec=softmax", "platform=cpu", *_FAST)
    assert search.returncode == 0, search.stdout + search.stderr
    (results,) = (tmp_path / "runs").glob("*/results.json")
    assert '"best"' in results.read_text()

    # the bench's spec source is declared (pyproject.toml) but cannot be imported: one line says so
    kernelbench = python("-m", "kernelevolve", "+spec=kernelbench:1/19", "platform=cpu", *_FAST)
    assert kernelbench.returncode != 0
    errors = [
        line for line in (kernelbench.stdout + kernelbench.stderr).splitlines() if "kernelbench" in line
    ]
    assert errors and "spec source 'kernelbench'" in errors[-1] and "kernelevolve.bench" in errors[-1], errors
