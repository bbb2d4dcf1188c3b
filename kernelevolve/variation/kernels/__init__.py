"""Our Triton kernels and the host code around them, as modules that seeds paste into candidates.

Each module in this package is Python that ruff and mypy check, but none is imported: `kernel_source`
reads a module's text (package data) and renders it, so `import kernelevolve` needs no Triton and a
candidate holds what the file says, verbatim. Rendering drops:
- the module docstring, the module-level imports (the candidate's prelude has torch, triton, tl and the
  like; a name imported from another kernel module is that module's rendered text, pasted by the seed)
  and checker directives (`# fmt: off`, which keeps the candidate's layout as written; `# ruff: noqa`;
  `# mypy:`);
- stand-ins, between `# ke:stand-in begin` and `# ke:stand-in end`: definitions, for the checkers only,
  of names the candidate gets elsewhere (a tunable another module declares, a table made per candidate);
- the tunables, between `# ke:tunables begin` and `# ke:tunables end`: `kernel_tunables` gives their
  lines, which seeds write ahead of the code (and other tunables with them);
- the blank lines before the first line kept.
A line `# ke:include NAME` is replaced by kernel module NAME's rendered text (a helper two modules share).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from importlib import resources

_PACKAGE = __name__
_MARKER = re.compile(r"^# ke:(.*)$")
_DIRECTIVE = re.compile(r"^# (fmt: (off|on)|ruff: noqa\b.*|mypy: .*)$")
_SECTIONS = ("stand-in", "tunables")


class KernelModuleError(ValueError):
    """A kernel module's markers are malformed (a bug in package data, not in a candidate)."""


def kernel_names() -> list[str]:
    """The kernel modules shipped, by name (`gemm` for gemm.py)."""
    files = resources.files(_PACKAGE).iterdir()
    return sorted(f.name[:-3] for f in files if f.name.endswith(".py") and not f.name.startswith("_"))


def kernel_source(name: str) -> str:
    """Kernel module `name`'s code as a candidate holds it: from its first line kept, ending in a newline."""
    return _rendered(name)[0]


def kernel_tunables(name: str) -> tuple[str, ...]:
    """The lines of kernel module `name`'s tunables section (none: empty)."""
    return _rendered(name)[1]


def module_text(name: str) -> str:
    """Kernel module `name`'s text, as the file holds it."""
    if name not in kernel_names():
        raise KernelModuleError(f"no kernel module {name!r}; shipped: {', '.join(kernel_names())}")
    return resources.files(_PACKAGE).joinpath(f"{name}.py").read_text(encoding="utf-8")


@functools.cache
def _rendered(name: str, including: tuple[str, ...] = ()) -> tuple[str, tuple[str, ...]]:
    if name in including:
        raise KernelModuleError(f"{name}.py includes itself through {' -> '.join(including)}")
    return render_module(module_text(name), name, lambda other: _rendered(other, (*including, name))[0])


def render_module(text: str, name: str, include: Callable[[str], str]) -> tuple[str, tuple[str, ...]]:
    """(code, tunables' lines) of kernel module text `text` (named `name` in errors); `include` gives the
    code of the module a `# ke:include` line names."""
    lines = text.splitlines(keepends=True)
    dropped = _header_lines(text)
    kept: list[str] = []
    tunables: list[str] = []
    section = ""
    for number, line in enumerate(lines):
        stripped = line.rstrip("\n")
        marker = _MARKER.match(stripped)
        if marker:
            section = _next_section(marker.group(1), section, f"{name}.py:{number + 1}")
            if marker.group(1).startswith("include "):
                kept.append(include(marker.group(1)[len("include ") :].strip()))
            continue
        if section == "tunables":
            tunables.append(stripped)
        if section or number in dropped or _DIRECTIVE.match(stripped):
            continue
        kept.append(line)
    if section:
        raise KernelModuleError(f"{name}.py: `# ke:{section} begin` has no end")
    while kept and not kept[0].strip():
        kept.pop(0)
    code = "".join(kept)
    if not code.endswith("\n"):
        raise KernelModuleError(f"{name}.py renders to nothing, or not to whole lines")
    return code, tuple(tunables)


def _header_lines(text: str) -> set[int]:
    """0-based numbers of the lines of the module docstring and the module-level imports."""
    tree = ast.parse(text)
    statements: list[ast.stmt] = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    if ast.get_docstring(tree, clean=False) is not None:
        statements.append(tree.body[0])
    return {n - 1 for s in statements for n in range(s.lineno, (s.end_lineno or s.lineno) + 1)}


def _next_section(marker: str, section: str, where: str) -> str:
    """The section after marker line `# ke:<marker>` inside `section` ("" outside any)."""
    if marker.startswith("include ") and not section:
        return ""
    for kind in _SECTIONS:
        if marker == f"{kind} begin" and not section:
            return kind
        if marker == f"{kind} end" and section == kind:
            return ""
    raise KernelModuleError(f"{where}: `# ke:{marker}` out of place (inside: {section or 'no section'})")
