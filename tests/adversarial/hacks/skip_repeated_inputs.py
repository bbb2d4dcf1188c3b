# hack: remember the last input and result; when the same input comes again, skip the kernel
# spec: relu
# strict: false
# expect: rejected_static state_between_calls
# runtime: ok (every call's inputs differ: the cache never hits)
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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._last_input = None
        self._last_output = None

    def forward(self, x):
        if self._last_input is not None and torch.equal(x, self._last_input):
            return self._last_output.clone()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        self._last_input = x.clone()
        self._last_output = out
        return out
