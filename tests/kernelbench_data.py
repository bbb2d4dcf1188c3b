"""Where tests find KernelBench's problems: `KERNELBENCH_PATH`, else the shared data beside the repo.

Tests that need it skip where neither exists (the GPU machine gets the JSONL through the environment
variable)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

KERNELBENCH = Path(
    os.environ.get(
        "KERNELBENCH_PATH",
        Path(__file__).resolve().parents[2] / "shared/benchmarks/kernelbench/problems.jsonl",
    )
)
needs_kernelbench = pytest.mark.skipif(
    not KERNELBENCH.is_file(), reason="KernelBench problems.jsonl not found"
)

# KernelBench's own evaluator (its `src` folder) for the second-judge tests: `KERNELBENCH_SRC`, else the
# copy in the shared data beside the repo.
KERNELBENCH_SRC = Path(
    os.environ.get(
        "KERNELBENCH_SRC",
        Path(__file__).resolve().parents[2] / "shared/benchmarks/kernelbench/src",
    )
)
needs_kernelbench_src = pytest.mark.skipif(
    not (KERNELBENCH_SRC / "kernelbench" / "eval.py").is_file(), reason="KernelBench's evaluator not found"
)
