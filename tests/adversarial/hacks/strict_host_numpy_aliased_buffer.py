# hack: strict-mode escape on the CPU: the input reaches NumPy through memory NumPy owns. `torch.as_tensor`
# of a NumPy buffer is a tensor sharing that buffer; `copy_` (an allowed copy) writes the input into it,
# and NumPy computes the relu on the buffer. No tensor method that reads data into Python or NumPy runs
# (`.numpy()`, `.tolist()`, `.item()`): NumPy reads its own array. A Triton kernel copies the result out.
# spec: relu
# expect: incorrect strict_violation
# expect-gpu: runtime_error ValueError (a NumPy array is host memory: a CUDA launch refuses the tensor made from it)
# runtime-gpu: runtime_error ValueError (a NumPy array is host memory: a CUDA launch refuses the tensor made from it)
import numpy as np
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
        buf = np.empty(x.numel(), dtype=np.float32)
        torch.as_tensor(buf).copy_(x.view(-1))
        res = torch.as_tensor(np.maximum(buf, 0.0))
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](res, out, x.numel(), BLOCK=64)
        return out
