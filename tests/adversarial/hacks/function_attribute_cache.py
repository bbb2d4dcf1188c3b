# hack: stash the output on a function attribute and return it on later calls
# spec: relu
# expect: rejected_static state_between_calls
# runtime: incorrect mismatch
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


def _stash():
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        previous = getattr(_stash, "result", None)
        if previous is not None:
            return previous
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        _stash.result = out
        return out
