# good: the LayerNorm training spec with activation recomputation: the forward kernel writes only y and
# saves nothing of its own (ctx.save_for_backward(x, weight)); the backward launches three kernels: one
# recomputing each row's mean and rstd, one writing dx and per-row weight/bias products into fp32 scratch,
# and a column reduction for dweight and dbias; returns a gradient for every input
# spec: shipped:train_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + cols, d * rstd * w + b, mask=mask)


@triton.jit
def ln_row_stats_kernel(x_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps))


@triton.jit
def ln_bwd_dx_kernel(
    x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, pw_ptr, pb_ptr, N, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    xhat = tl.where(mask, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * tl.load(rstd_ptr + row)
    tl.store(dx_ptr + row * N + cols, dx, mask=mask)
    tl.store(pw_ptr + row * N + cols, dy * xhat, mask=mask)
    tl.store(pb_ptr + row * N + cols, dy, mask=mask)


@triton.jit
def column_sum_kernel(p_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        acc += tl.load(p_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=cols < N)


class LayerNormRecompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        M, N = x2.shape
        y = torch.empty_like(x2)
        BLOCK = triton.next_power_of_2(N)
        ln_fwd_kernel[(M,)](x2, weight, bias, y, N, eps, BLOCK=BLOCK)
        ctx.save_for_backward(x2, weight)
        ctx.eps = eps
        ctx.shape = shape
        return y.view(shape)

    @staticmethod
    def backward(ctx, dy):
        x2, weight = ctx.saved_tensors
        M, N = x2.shape
        dy2 = dy.reshape(M, N).contiguous()
        BLOCK = triton.next_power_of_2(N)
        mean = torch.empty(M, device=x2.device, dtype=torch.float32)
        rstd = torch.empty(M, device=x2.device, dtype=torch.float32)
        ln_row_stats_kernel[(M,)](x2, mean, rstd, N, ctx.eps, BLOCK=BLOCK)
        dx = torch.empty_like(x2)
        partial_w = torch.empty((M, N), device=x2.device, dtype=torch.float32)
        partial_b = torch.empty((M, N), device=x2.device, dtype=torch.float32)
        ln_bwd_dx_kernel[(M,)](x2, weight, dy2, mean, rstd, dx, partial_w, partial_b, N, BLOCK=BLOCK)
        dw = torch.empty(N, device=x2.device, dtype=weight.dtype)
        db = torch.empty(N, device=x2.device, dtype=weight.dtype)
        grid = (triton.cdiv(N, 64),)
        column_sum_kernel[grid](partial_w, dw, M, N, BLOCK_M=8, BLOCK_N=64)
        column_sum_kernel[grid](partial_b, db, M, N, BLOCK_M=8, BLOCK_N=64)
        return dx.view(ctx.shape), dw, db, None


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        return LayerNormRecompute.apply(x, self.ln.weight, self.ln.bias, self.ln.eps)
