"""Use the winners: drop-in custom ops and an artifact store of winning kernels.

Import the parts you need (`kernelevolve.export.custom_op`, `kernelevolve.export.store`); this
package itself imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "KernelOp": "kernelevolve.export.custom_op",
    "export_custom_op": "kernelevolve.export.custom_op",
    "load_kernel_class": "kernelevolve.export.loader",
    "Artifact": "kernelevolve.export.store",
    "ArtifactStore": "kernelevolve.export.store",
    "artifacts_from_run": "kernelevolve.export.store",
    "lookup": "kernelevolve.export.store",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kernelevolve.export' has no attribute {name!r}")
