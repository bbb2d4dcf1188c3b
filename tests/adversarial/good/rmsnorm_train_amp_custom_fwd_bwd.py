# good: RMSNorm for training with the autograd.Function's forward and backward decorated by
# torch.amp.custom_fwd / custom_bwd (as mixed-precision libraries do; a no-op outside autocast); forward
# saves the per-row rstd, backward gives dx per row and d(weight) from per-row partials summed by a
# second kernel (no atomics)
# spec: rmsnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, x * rstd * w, mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def rms_bwd_kernel(x_ptr, w_ptr, dy_ptr, rstd_ptr, dx_ptr, dw_part_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    xhat = x * rstd
    wdy = w * dy
    dx = rstd * (wdy - xhat * tl.sum(wdy * xhat, axis=0) / n_cols)
    tl.store(dx_ptr + row * n_cols + cols, dx, mask=mask)
    tl.store(dw_part_ptr + row * n_cols + cols, dy * xhat, mask=mask)


@triton.jit
def colsum_kernel(p_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), tl.float32)
    for r0 in range(0, n_rows, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        acc += tl.sum(
            tl.load(
                p_ptr + r[:, None] * n_cols + c[None, :],
                mask=(r[:, None] < n_rows) & (c[None, :] < n_cols),
                other=0.0,
            ),
            axis=0,
        )
    tl.store(out_ptr + c, acc, mask=c < n_cols)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, weight, eps):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty(rows, device=x.device, dtype=torch.float32)
        block = triton.next_power_of_2(cols)
        rms_fwd_kernel[(rows,)](x, weight, y, rstd, cols, eps, BLOCK=block)
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        dx = torch.empty_like(x)
        dw_part = torch.empty((rows, cols), device=x.device, dtype=torch.float32)
        rms_bwd_kernel[(rows,)](x, weight, dy.contiguous(), rstd, dx, dw_part, cols, BLOCK=block)
        dw = torch.empty_like(weight)
        colsum_kernel[(triton.cdiv(cols, 32),)](dw_part, dw, rows, cols, BLOCK_R=8, BLOCK_C=32)
        return dx, dw, None


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.eps = 1e-6

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _RMSNorm.apply(x, self.weight, self.eps)
