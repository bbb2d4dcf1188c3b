"""Compile a candidate at every shape without running it (a backend a platform can only compile: CuTe
DSL on a CPU machine). Imports candidate code: runs in a runner (`kernelevolve.eval.runner`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelevolve.types import KernelSpec, Status

if TYPE_CHECKING:
    from kernelevolve.backends.base import Backend


def compile_only_fields(
    source: str, spec_json: dict[str, Any], arch: str, backend: Backend
) -> dict[str, Any]:
    """Report fields (JSON-ready): `compiled_only` with what compiled, or the first compile failure."""
    spec = KernelSpec.from_json(spec_json)
    compile_only = getattr(backend, "compile_only", None)
    if compile_only is None:
        return _fields(
            Status.REJECTED_STATIC,
            "backend_not_runnable",
            "this backend can only be compiled on this platform, and it has no compile-only path",
        )
    compiled: list[str] = []
    for shape in spec.shapes:
        outcome = compile_only(source, spec, shape, arch=arch)
        if not outcome.ok:
            return _fields(outcome.status, outcome.error_name, f"at shape {shape.name!r}: {outcome.feedback}")
        compiled.append(f"{shape.name} ({', '.join(outcome.kernels)}, {outcome.seconds:.1f} s)")
    return _fields(
        Status.COMPILED_ONLY,
        "execution_skipped",
        f"compiled for {arch} at every shape: {'; '.join(compiled)}. Execution skipped: this platform "
        "runs the backend compile-only, so correctness and timing need a GPU platform.",
    )


def _fields(status: Status, error_name: str, feedback: str) -> dict[str, Any]:
    return {"status": Status(status).value, "error_name": error_name, "feedback": feedback}
