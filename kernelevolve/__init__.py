"""kernelevolve: evolutionary search for fast, verified GPU kernels.

`kernelevolve.optimize(...)` is the Python entry point (see `kernelevolve.api`); it and the other
public names load on first use, so `import kernelevolve` stays light (no torch).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# Before anything parses Python in threads: a CPython race on early 3.11 and 3.12 releases (parse_guard).
from kernelevolve.eval.parse_guard import serialise_parsing  # noqa: E402

serialise_parsing()

_LAZY = {
    "optimize": "kernelevolve.api",
    "Budget": "kernelevolve.api",
    "OptimizeResult": "kernelevolve.api",
    "ShapeReport": "kernelevolve.api",
    "KernelOp": "kernelevolve.export.custom_op",
    "export_custom_op": "kernelevolve.export.custom_op",
    "lookup": "kernelevolve.export.store",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'kernelevolve' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
