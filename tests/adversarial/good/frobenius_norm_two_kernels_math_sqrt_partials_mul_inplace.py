# good: KernelBench level-1 Frobenius-norm normalisation, LLM style: a partial-sum-of-squares kernel into
# an fp32 workspace (`torch.zeros(..., device=x.device, dtype=torch.float32)`), a one-program finalize that
# writes 1/sqrt into a 1-element tensor, then the divide as a separate scale kernel; `x.view(-1)` after
# `contiguous()`, a documented helper per stage, `import math` for the grid, class-level BLOCK
# spec: kb_frobenius_norm
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sumsq_partial_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def inv_norm_kernel(partial_ptr, inv_ptr, n_partials, BLOCK_P: tl.constexpr):
    offs = tl.arange(0, BLOCK_P)
    p = tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    total = tl.sum(p, axis=0)
    tl.store(inv_ptr, 1.0 / tl.sqrt(total))


@triton.jit
def scale_by_scalar_tensor_kernel(x_ptr, inv_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inv = tl.load(inv_ptr)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * inv, mask=offs < n)


def _partials(flat: torch.Tensor, block: int) -> torch.Tensor:
    """Sum of squares of each BLOCK-sized chunk, in fp32."""
    n_blocks = math.ceil(flat.numel() / block)
    partial = torch.zeros(n_blocks, device=flat.device, dtype=torch.float32)
    sumsq_partial_kernel[(n_blocks,)](flat, partial, flat.numel(), BLOCK=block)
    return partial


def _inverse_norm(partial: torch.Tensor) -> torch.Tensor:
    """1 / sqrt(sum(partial)) as a 1-element tensor (no host synchronisation)."""
    inv = torch.empty(1, device=partial.device, dtype=torch.float32)
    inv_norm_kernel[(1,)](partial, inv, partial.numel(), BLOCK_P=triton.next_power_of_2(partial.numel()))
    return inv


class ModelNew(nn.Module):
    BLOCK = 256

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == 0:
            return x
        flat = x.contiguous().view(-1)
        inv = _inverse_norm(_partials(flat, self.BLOCK))
        out = torch.empty_like(flat)
        n = flat.numel()
        scale_by_scalar_tensor_kernel[(math.ceil(n / self.BLOCK),)](flat, inv, out, n, BLOCK=self.BLOCK)
        return out.view(x.shape)
