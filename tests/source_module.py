"""Candidate source as an imported module: Triton reads a kernel's source from a real file."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType


def load_source(source: str, directory: Path, name: str) -> ModuleType:
    """`source` written to `directory/name.py` and imported as module `name`."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def count_pointwise_launches(module: ModuleType) -> list[int]:
    """Counts launches of a rendered seed's one pointwise kernel (what fusing it into the GEMM or
    convolution before it removes): its launcher is wrapped, one item appended per launch."""
    (name,) = [n for n in vars(module) if n.startswith("_launch_triton_poi")]
    launches: list[int] = []
    original = getattr(module, name)

    def counted(*args: object) -> None:
        launches.append(1)
        original(*args)

    setattr(module, name, counted)
    return launches


def build_for_hopper(build_script: str, *arguments: str, cache: Path) -> None:
    """Runs `build_script` (Triton compiles for sm_90, no launch) in a process of its own, compiled rather
    than interpreted: Triton decides at import whether it interprets, and the interpreter accepts code the
    compiler rejects. Fails the test with the compiler's message."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(cache)
    build = [sys.executable, "-c", build_script, *arguments]
    result = subprocess.run(build, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
