# hack: strict-mode escape: read the input as a Python list, compute relu in Python and rebuild a tensor
# (torch.tensor only copies, so it is allowed); the Triton kernel runs on zero elements
# spec: relu
# expect: rejected_static host_compute
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


class ModelNew(nn.Module):
    def forward(self, x):
        values = [v if v > 0.0 else 0.0 for v in x.tolist()]
        out = torch.tensor(values, device=x.device, dtype=x.dtype)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out
