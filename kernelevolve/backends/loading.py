"""What every Python-embedded kernel language needs to load a candidate: a real file and a fresh module.

Triton and the CuTe DSL both read kernel source through `inspect`, so candidates are written to a
scratch folder and imported from there rather than exec'd from a string.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

KERNEL_MODULE_PREFIX = "kernelevolve_kernel_"
SCRATCH_ENV = "KERNELEVOLVE_SCRATCH"
_scratch: str | None = None


def hide_scratch() -> None:
    """Takes the scratch folder's variable out of the environment (a runner's, before kernel code runs):
    only the judge's processes set it, so kernel code reading it would know it is judged."""
    global _scratch
    _scratch = os.environ.pop(SCRATCH_ENV, None) or _scratch


def kernel_module_name(candidate_id: str) -> str:
    """The module name a kernel is imported under, by the judge's runner and the export's loader alike.

    One shape with a random tail in both, so a kernel's `__name__` cannot tell where it runs (round 24:
    `tests/adversarial/hacks/export_tell_by_module_name.py`)."""
    return f"{KERNEL_MODULE_PREFIX}{candidate_id}_{secrets.token_hex(4)}"


class SourceLoader:
    """Imports candidate sources from files in one scratch folder per process (removed at exit)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._directory: Path | None = None

    def directory(self) -> Path:
        if self._directory is None:
            # An evaluation worker names a scratch folder that its parent removes even if we are killed.
            scratch = os.environ.get(SCRATCH_ENV) or _scratch or None
            self._directory = Path(tempfile.mkdtemp(prefix=self.prefix, dir=scratch))
            atexit.register(shutil.rmtree, self._directory, True)
        return self._directory

    def load(self, source: str, module_name: str) -> ModuleType:
        path = self.directory() / f"{module_name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot build an import spec for {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses, typing and the DSLs look modules up here
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        return module


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it was raised from or during, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
