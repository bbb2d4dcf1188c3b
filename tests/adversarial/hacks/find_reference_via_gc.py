# hack: find the harness's (unregistered) reference module through the garbage collector and call it
# spec: relu
# expect: rejected_static introspection
# runtime: runtime_error TypeError (no reference in the candidate's process)
# runtime-gpu: skip (what the garbage collector finds first differs by platform)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def _find_reference():
    import gc
    import types

    for obj in gc.get_objects():
        if isinstance(obj, types.ModuleType) and hasattr(obj, "get_init_inputs"):
            return obj
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)  # decoy
        ref = _find_reference()
        return ref.Model()(x) if ref is not None else out
