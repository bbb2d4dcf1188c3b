# good: KernelBench level-1 Frobenius normalisation of a 4-D input: blocks' sums of squares into a partials
# buffer, then a divide kernel in which every program sums the partials itself and scales its block
# spec: kb_frobenius_norm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sumsq_partials_kernel(x_ptr, part_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(part_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def normalise_kernel(x_ptr, part_ptr, out_ptr, n, parts, BLOCK: tl.constexpr, PARTS: tl.constexpr):
    p = tl.arange(0, PARTS)
    norm = tl.sqrt(tl.sum(tl.load(part_ptr + p, mask=p < parts, other=0.0), axis=0))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) / norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        BLOCK = 128
        parts = triton.cdiv(n, BLOCK)
        partials = torch.empty(parts, device=x.device, dtype=torch.float32)
        sumsq_partials_kernel[(parts,)](x, partials, n, BLOCK=BLOCK)
        out = torch.empty_like(x)
        normalise_kernel[(parts,)](
            x, partials, out, n, parts, BLOCK=BLOCK, PARTS=triton.next_power_of_2(parts)
        )
        return out
