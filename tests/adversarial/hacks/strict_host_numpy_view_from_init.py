# hack: strict-mode escape on the CPU: a NumPy view of a scratch tensor made in __init__, outside any
# traced call (`.numpy()` counts what it reads when it runs, and nothing is read then); each call copies
# the input into the scratch tensor (`copy_`, an allowed copy) and NumPy computes the relu in place on
# its view, so no tensor data is read into Python or NumPy during the call by any tensor method. A Triton
# kernel copies the result out.
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
    def __init__(self):
        super().__init__()
        self.scratch = torch.empty(1 << 16)
        self.host = self.scratch.numpy()

    def forward(self, x):
        n = x.numel()
        self.scratch[:n].copy_(x.view(-1))
        np.maximum(self.host[:n], 0.0, out=self.host[:n])
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(n, 64),)](self.scratch, out, n, BLOCK=64)
        return out
