# good: a spec whose get_inputs() passes one tensor in both argument positions (`[x, x]`); the kernel reads
# both arguments through their own pointers, as it would two distinct tensors
# spec: same_input_twice
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, a * tl.sigmoid(b) + 0.5 * b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        gate_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
