"""What every Python-embedded kernel language needs to load a candidate: a real file and a fresh module.

Triton and the CuTe DSL both read kernel source through `inspect`, so candidates are written to a
scratch folder and imported from there rather than exec'd from a string.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType


class SourceLoader:
    """Imports candidate sources from files in one scratch folder per process (removed at exit)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._directory: Path | None = None

    def directory(self) -> Path:
        if self._directory is None:
            # An evaluation worker names a scratch folder that its parent removes even if we are killed.
            scratch = os.environ.get("KERNELEVOLVE_SCRATCH") or None
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
