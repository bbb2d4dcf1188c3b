# good: the RMSNorm training spec with the per-row rstd saved from the forward (an fp32 tensor made by
# x.new_empty), a backward of two kernels: dx per row from the saved rstd, and dweight by column-block
# programs that loop over every row (deterministic, no atomics, no partials); the block sizes in a frozen
# dataclass whose launch is a functools.partial over the grid, the eps taken from the module
# spec: shipped:train_rmsnorm
import functools
from dataclasses import dataclass

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_fwd(x_ptr, w_ptr, y_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * N + cols, x * rstd * w, mask=mask)


@triton.jit
def rms_bwd_dx(x_ptr, w_ptr, dy_ptr, rstd_ptr, dx_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rstd = tl.load(rstd_ptr + row)
    wdy = w * dy
    c = tl.sum(wdy * x, axis=0) / N
    tl.store(dx_ptr + row * N + cols, rstd * wdy - rstd * rstd * rstd * c * x, mask=mask)


@triton.jit
def rms_bwd_dw(x_ptr, dy_ptr, rstd_ptr, dw_ptr, M, N, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for row in range(0, M):
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        acc += dy * x * tl.load(rstd_ptr + row)
    tl.store(dw_ptr + cols, acc, mask=mask)


@dataclass(frozen=True)
class Launch:
    row_block: int
    col_block: int

    @classmethod
    def for_width(cls, n: int) -> "Launch":
        return cls(row_block=triton.next_power_of_2(n), col_block=min(64, triton.next_power_of_2(n)))

    def rows(self, kernel, m: int):
        return functools.partial(kernel[(m,)], BLOCK=self.row_block)

    def columns(self, kernel, n: int):
        return functools.partial(kernel[(triton.cdiv(n, self.col_block),)], BLOCK_N=self.col_block)


class _RMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        m, n = x2.shape
        cfg = Launch.for_width(n)
        y = torch.empty_like(x2)
        rstd = x2.new_empty((m,), dtype=torch.float32)
        cfg.rows(rms_fwd, m)(x2, weight, y, rstd, n, eps)
        ctx.save_for_backward(x2, weight, rstd)
        ctx.cfg = cfg
        ctx.shape = shape
        return y.view(shape)

    @staticmethod
    def backward(ctx, dy):
        x2, weight, rstd = ctx.saved_tensors
        m, n = x2.shape
        dy2 = dy.reshape(m, n).contiguous()
        dx = torch.empty_like(x2)
        dw = torch.empty_like(weight)
        ctx.cfg.rows(rms_bwd_dx, m)(x2, weight, dy2, rstd, dx, n)
        ctx.cfg.columns(rms_bwd_dw, n)(x2, dy2, rstd, dw, m, n)
        return dx.view(ctx.shape), dw, None


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _RMSNormFn.apply(x, self.weight, self.eps)
