# hack: strict-mode escape on the CPU: a match statement's capture pattern rebinds the input under a name
# the static checks do not track, and NumPy computes on it; a Triton kernel copies the result out
# spec: relu
# expect: rejected_static host_compute
# runtime: incorrect strict_violation
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
        match x:
            case t:
                res = torch.as_tensor(np.maximum(np.asarray(t.cpu()), 0.0)).to(x.device)
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](res, out, x.numel(), BLOCK=64)
        return out
