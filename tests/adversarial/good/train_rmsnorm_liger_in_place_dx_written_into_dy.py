# good: the RMSNorm training spec as Liger-Kernel writes it with `in_place=True`: the forward saves x and
# the fp32 rstd per row, the backward computes dx row by row and stores it over the upstream gradient dy
# (dy is read first in the same program, and autograd owns it: nothing reads it after this node), returns
# dy as dx, and sums per-program fp32 partial rows of the weight's gradient in a second kernel
# spec: shipped:train_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_norm_forward(Y, X, W, RSTD, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(X + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + offs, mask=mask, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * n_cols + offs, x * rstd * w, mask=mask)


@triton.jit
def _rms_norm_backward(DY, DX, X, W, RSTD, DW, n_rows, n_cols, rows_per_program, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    w = tl.load(W + offs, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    start = pid * rows_per_program
    for row in range(start, tl.minimum(start + rows_per_program, n_rows)):
        dy = tl.load(DY + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(X + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        xhat = x * rstd
        m = dy * w
        dx = rstd * m - rstd * xhat * (tl.sum(m * xhat, axis=0) / n_cols)
        dw += dy * xhat
        tl.store(DX + row * n_cols + offs, dx, mask=mask)  # DX is DY when in place
    tl.store(DW + pid * n_cols + offs, dw, mask=mask)


class LigerRMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, eps, in_place=True):
        shape = X.shape
        dim = shape[-1]
        X = X.view(-1, dim)
        n_rows = X.shape[0]
        BLOCK_SIZE = triton.next_power_of_2(dim)
        Y = torch.empty((n_rows, dim), dtype=X.dtype, device=X.device)
        RSTD = torch.empty(n_rows, dtype=torch.float32, device=X.device)
        _rms_norm_forward[(n_rows,)](Y, X, W, RSTD, dim, eps, BLOCK_SIZE=BLOCK_SIZE)
        ctx.in_place = in_place
        ctx.BLOCK_SIZE = BLOCK_SIZE
        ctx.save_for_backward(X, W, RSTD)
        return Y.view(*shape)

    @staticmethod
    def backward(ctx, dY):
        X, W, RSTD = ctx.saved_tensors
        shape = dY.shape
        dim = shape[-1]
        dY = dY.contiguous().view(-1, dim)
        n_rows = dY.shape[0]
        rows_per_program = 2
        n_programs = triton.cdiv(n_rows, rows_per_program)
        dW_partial = torch.empty((n_programs, dim), dtype=torch.float32, device=W.device)
        dX = dY if ctx.in_place else torch.empty_like(dY)
        _rms_norm_backward[(n_programs,)](
            dY, dX, X, W, RSTD, dW_partial, n_rows, dim, rows_per_program, BLOCK_SIZE=ctx.BLOCK_SIZE
        )
        dW = torch.empty_like(W)
        _column_sum[(triton.cdiv(dim, 128),)](dW_partial, dW, n_programs, dim, BLOCK=128)
        return dX.view(*shape), dW, None, None


@triton.jit
def _column_sum(P, OUT, n_parts, n_cols, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p in range(n_parts):
        acc += tl.load(P + p * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(OUT + cols, acc, mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return LigerRMSNormFunction.apply(x.contiguous(), self.weight, self.eps)
