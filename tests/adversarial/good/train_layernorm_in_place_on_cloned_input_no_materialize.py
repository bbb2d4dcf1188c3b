# good: the LayerNorm training spec normalising in place on a fresh clone of x (`y = x.clone()`, one kernel
# reading and overwriting y row by row), the forward returning that in-place result; fp32 mean / rstd
# saved; `ctx.set_materialize_grads(False)`; the backward: dx per row, dweight / dbias from per-program
# partial rows summed by a second kernel
# spec: shipped:train_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_inplace(y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(y_ptr + row * n + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + cols, xc * rstd * w + b, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def ln_bwd(
    x_ptr,
    dy_ptr,
    w_ptr,
    mean_ptr,
    rstd_ptr,
    dx_ptr,
    pw_ptr,
    pb_ptr,
    rows,
    n,
    PER: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    db = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(PER):
        row = pid * PER + i
        if row < rows:
            x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
            dy = tl.load(dy_ptr + row * n + cols, mask=mask, other=0.0)
            xhat = (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row)
            xhat = tl.where(mask, xhat, 0.0)
            wdy = w * dy
            c1 = tl.sum(xhat * wdy, axis=0) / n
            c2 = tl.sum(wdy, axis=0) / n
            tl.store(dx_ptr + row * n + cols, (wdy - (xhat * c1 + c2)) * tl.load(rstd_ptr + row), mask=mask)
            dw += dy * xhat
            db += dy
    tl.store(pw_ptr + pid * n + cols, dw, mask=mask)
    tl.store(pb_ptr + pid * n + cols, db, mask=mask)


@triton.jit
def col_sum(p_ptr, out_ptr, parts, n, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p in range(parts):
        acc += tl.load(p_ptr + p * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < n)


class InPlaceLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        ctx.set_materialize_grads(False)
        rows, n = x.shape
        y = x.clone()
        mean = torch.empty(rows, dtype=torch.float32, device=x.device)
        rstd = torch.empty_like(mean)
        ln_inplace[(rows,)](y, weight, bias, mean, rstd, n, eps, BLOCK=triton.next_power_of_2(n))
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        if dy is None:
            return None, None, None, None
        x, weight, mean, rstd = ctx.saved_tensors
        rows, n = x.shape
        per = 4
        parts = triton.cdiv(rows, per)
        block = triton.next_power_of_2(n)
        dx = torch.empty_like(x)
        pw = torch.empty((parts, n), dtype=torch.float32, device=x.device)
        pb = torch.empty_like(pw)
        ln_bwd[(parts,)](x, dy.contiguous(), weight, mean, rstd, dx, pw, pb, rows, n, PER=per, BLOCK=block)
        dw, db = torch.empty_like(weight), torch.empty_like(weight)
        col_sum[(triton.cdiv(n, 64),)](pw, dw, parts, n, BLOCK=64)
        col_sum[(triton.cdiv(n, 64),)](pb, db, parts, n, BLOCK=64)
        return dx, dw, db, None


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        return InPlaceLayerNorm.apply(x.contiguous(), self.ln.weight, self.ln.bias, self.ln.eps)
