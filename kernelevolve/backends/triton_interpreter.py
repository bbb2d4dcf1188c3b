"""A fix to Triton's CPU interpreter, applied where candidates run under it (the CPU platform).

The interpreter keeps bf16 values as their uint16 bits (NumPy has no bf16) and its `tl.dot` multiplies
those bits as integers: in Triton 3.6 a 16x16 bf16 dot is off by about 1e10, so every bf16 GEMM, ours,
a template's or Inductor's, fails on CPU while it passes on a GPU. `patch_bf16_dot` widens bf16 operands
to float32 (exact: a bf16 value is a float32 with its low 16 bits zero) before the interpreter's own dot,
which is what a GPU's tensor cores compute with an fp32 accumulator. Idempotent; a Triton without the
interpreter's builder is left alone.
"""

from __future__ import annotations

from typing import Any

_MARK = "_kernelevolve_bf16_dot"


def patch_bf16_dot() -> bool:
    """Make the interpreter's bf16 dot multiply values, not bits; False where there is nothing to patch."""
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    original = getattr(builder, "create_dot", None)
    if builder is None or original is None:
        return False
    if getattr(original, _MARK, False):
        return True

    def widened(handle: Any) -> Any:
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        bits = np.asarray(handle.data).astype(np.uint32) << np.uint32(16)
        return interpreter.TensorHandle(bits.view(np.float32), tl.float32)

    def create_dot(
        self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any
    ) -> Any:
        return original(self, widened(a), widened(b), d, input_precision, max_num_imprecise_acc)

    setattr(create_dot, _MARK, True)
    builder.create_dot = create_dot
    return True
