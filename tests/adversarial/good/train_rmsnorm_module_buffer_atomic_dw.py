# good: RMSNorm training with the weight gradient summed by tl.atomic_add into an fp32 buffer registered
# on the module (register_buffer, persistent=False) and zeroed in place each backward; rstd kept per row
# for backward; an autograd.Function taking the module's nn.Parameter, the (batch, seq, dim) input viewed
# as rows
# spec: shipped:train_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_fwd(x_ptr, w_ptr, y_ptr, rstd_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * cols + offs, x * rstd * w, mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def rms_bwd(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, dw_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * cols + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    rstd = tl.load(rstd_ptr + row)
    xhat = x * rstd
    g = dy * w
    dx = rstd * (g - xhat * tl.sum(g * xhat, axis=0) / cols)
    tl.store(dx_ptr + row * cols + offs, dx, mask=mask)
    tl.atomic_add(dw_ptr + offs, dy * xhat, mask=mask)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, dw_acc):
        cols = x.shape[-1]
        rows = x.reshape(-1, cols)
        y = torch.empty_like(rows)
        rstd = torch.empty(rows.shape[0], device=x.device, dtype=torch.float32)
        block = triton.next_power_of_2(cols)
        rms_fwd[(rows.shape[0],)](rows, weight, y, rstd, cols, eps, BLOCK=block)
        ctx.save_for_backward(rows, weight, rstd)
        ctx.dw_acc = dw_acc
        ctx.shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        rows, weight, rstd = ctx.saved_tensors
        cols = rows.shape[1]
        dx = torch.empty_like(rows)
        dw = ctx.dw_acc
        dw.zero_()
        rms_bwd[(rows.shape[0],)](
            dy.reshape(-1, cols).contiguous(),
            rows,
            weight,
            rstd,
            dx,
            dw,
            cols,
            BLOCK=triton.next_power_of_2(cols),
        )
        return dx.view(ctx.shape), dw.clone(), None, None


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.register_buffer("dw_acc", torch.zeros(dim), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _RMSNorm.apply(x, self.weight, self.eps, self.dw_acc)
