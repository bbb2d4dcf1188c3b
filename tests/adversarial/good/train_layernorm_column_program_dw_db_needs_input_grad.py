# good: the LayerNorm training spec: the forward kernel writes y and each row's mean and rstd (fp32, made
# by torch.empty with the row count); the backward checks ctx.needs_input_grad, launching the dx kernel
# only when x needs it and one column-block kernel computing dweight and dbias together by looping over the
# rows (no atomics, no partial buffers); the module keeps its nn.LayerNorm and passes its parameters
# spec: shipped:train_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_fwd(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + cols, d * rstd * w + b, mask=mask)


@triton.jit
def ln_dx(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - tl.load(mean_ptr + row)) * rstd, 0.0)
    g = w * dy
    c1 = tl.sum(xhat * g, axis=0) / N
    c2 = tl.sum(g, axis=0) / N
    tl.store(dx_ptr + row * N + cols, (g - xhat * c1 - c2) * rstd, mask=mask)


@triton.jit
def ln_dwdb(x_ptr, dy_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, M, N, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    dw = tl.zeros((BLOCK_N,), tl.float32)
    db = tl.zeros((BLOCK_N,), tl.float32)
    for row in range(M):
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        xhat = (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row)
        dw += dy * xhat
        db += dy
    tl.store(dw_ptr + cols, dw, mask=mask)
    tl.store(db_ptr + cols, db, mask=mask)


class LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        x = x.contiguous()
        m, n = x.shape
        y = torch.empty_like(x)
        mean = torch.empty(m, device=x.device, dtype=torch.float32)
        rstd = torch.empty(m, device=x.device, dtype=torch.float32)
        ln_fwd[(m,)](x, weight, bias, y, mean, rstd, n, eps, BLOCK=triton.next_power_of_2(n))
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        m, n = x.shape
        dy = dy.contiguous()
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = torch.empty_like(x)
            ln_dx[(m,)](x, weight, dy, mean, rstd, dx, n, BLOCK=triton.next_power_of_2(n))
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            dw, db = torch.empty_like(weight), torch.empty_like(weight)
            ln_dwdb[(triton.cdiv(n, 64),)](x, dy, mean, rstd, dw, db, m, n, BLOCK_N=64)
        return dx, dw, db, None


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        return LayerNormFn.apply(x, self.ln.weight, self.ln.bias, self.ln.eps)
