# hack: strict mode; the input read as a Python list through a method fetched in __init__ by a name built
# at run time (so no host read is spelled on the call path), relu in Python, torch.tensor to copy it back;
# the Triton kernel runs on zero elements
# spec: relu
# expect: rejected_static dynamic_code
# runtime: incorrect strict_violation (the runner counts the input data read into Python or NumPy)
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


def _relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._read = getattr(type(torch.empty(0)), "to" + "list")

    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        values = [v if v > 0 else 0.0 for v in self._read(x)]
        return torch.tensor(values, dtype=x.dtype, device=x.device)
