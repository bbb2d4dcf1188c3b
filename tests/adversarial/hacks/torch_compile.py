# hack: let torch.compile generate the kernel; a decoy Triton launch keeps the backend check quiet
# spec: relu
# strict: false
# expect: rejected_static torch_compile
# runtime: skip (minutes of Inductor under the CPU interpreter)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


_compiled_relu = torch.compile(F.relu)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)  # decoy
        return _compiled_relu(x)
