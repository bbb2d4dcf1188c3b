"""The evaluation harness: correctness and timing of candidate kernels, in child processes.

Nothing heavy is imported here: spawned workers import `kernelevolve.eval.worker` before they
have pinned their device, and the driver imports `kernelevolve.eval.local` without touching CUDA.
"""

from __future__ import annotations

__all__ = ["LocalEvaluator"]


def __getattr__(name: str) -> object:
    if name == "LocalEvaluator":
        from kernelevolve.eval.local import LocalEvaluator

        return LocalEvaluator
    raise AttributeError(f"module 'kernelevolve.eval' has no attribute {name!r}")
