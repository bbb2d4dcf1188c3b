"""Kernel languages. A new DSL is a new module here plus one line in `_BACKEND_MODULES`."""

from __future__ import annotations

import importlib

from kernelevolve.backends.base import Backend

_BACKEND_MODULES = {
    "triton": "kernelevolve.backends.triton",
    "cute": "kernelevolve.backends.cute",
}


def backend_names() -> list[str]:
    return sorted(_BACKEND_MODULES)


def get_backend(name: str) -> Backend:
    """Import the backend's module only when asked (triton/cutlass are heavy and optional)."""
    if name not in _BACKEND_MODULES:
        raise KeyError(f"unknown backend {name!r}; valid: {', '.join(backend_names())}")
    module = importlib.import_module(_BACKEND_MODULES[name])
    backend: Backend = module.BACKEND
    return backend
