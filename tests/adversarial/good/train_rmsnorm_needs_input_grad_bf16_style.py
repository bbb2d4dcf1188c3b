# good: the RMSNorm training spec the way LLM-written Unsloth/Liger-like code does it: the Function's
# forward and backward as @staticmethods taking (x, weight, eps), the forward saving rstd per row,
# the backward computing dx always and the weight's gradient only `if ctx.needs_input_grad[1]`
# (per-program fp32 partial rows then a column-sum kernel); 3-D input flattened with `view(-1, dim)`
# spec: shipped:train_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_fwd(x_ptr, w_ptr, y_ptr, rstd_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, x * rstd * w, mask=mask)


@triton.jit
def _rms_bwd(
    dy_ptr,
    x_ptr,
    w_ptr,
    rstd_ptr,
    dx_ptr,
    dw_part_ptr,
    n_rows,
    n_cols,
    ROWS_PER_PROG: tl.constexpr,
    COMPUTE_DW: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ROWS_PER_PROG):
        row = pid * ROWS_PER_PROG + i
        if row < n_rows:
            x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            rstd = tl.load(rstd_ptr + row)
            xhat = x * rstd
            wdy = w * dy
            dx = rstd * (wdy - xhat * (tl.sum(wdy * xhat, axis=0) / n_cols))
            tl.store(dx_ptr + row * n_cols + cols, dx, mask=mask)
            if COMPUTE_DW:
                dw_acc += dy * xhat
    if COMPUTE_DW:
        tl.store(dw_part_ptr + pid * n_cols + cols, dw_acc, mask=mask)


@triton.jit
def _col_sum(part_ptr, out_ptr, n_parts, n_cols, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p in range(n_parts):
        acc += tl.load(part_ptr + p * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < n_cols)


class FastRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        dim = shape[-1]
        x = x.view(-1, dim)
        n_rows = x.shape[0]
        y = torch.empty_like(x)
        rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(dim)
        _rms_fwd[(n_rows,)](x, weight, y, rstd, dim, eps, BLOCK=block)
        ctx.block = block
        ctx.shape = shape
        ctx.save_for_backward(x, weight, rstd)
        return y.view(*shape)

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        n_rows, dim = x.shape
        dy = dy.reshape(-1, dim).contiguous()
        dx = torch.empty_like(x)
        rows_per = 4
        n_progs = triton.cdiv(n_rows, rows_per)
        want_dw = ctx.needs_input_grad[1]
        dw_part = torch.empty((n_progs, dim), dtype=torch.float32, device=x.device) if want_dw else dx
        _rms_bwd[(n_progs,)](
            dy,
            x,
            weight,
            rstd,
            dx,
            dw_part,
            n_rows,
            dim,
            ROWS_PER_PROG=rows_per,
            COMPUTE_DW=want_dw,
            BLOCK=ctx.block,
        )
        dw = None
        if want_dw:
            dw = torch.empty_like(weight)
            _col_sum[(triton.cdiv(dim, 64),)](dw_part, dw, n_progs, dim, BLOCK=64)
        return dx.view(ctx.shape), dw, None


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FastRMSNorm.apply(x.contiguous(), self.weight, self.eps)
