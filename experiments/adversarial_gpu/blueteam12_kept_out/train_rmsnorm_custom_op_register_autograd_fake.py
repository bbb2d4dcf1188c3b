# kept out (patching in every mode, static and at run time, by design): the RMSNorm training spec as two
# `torch.library.custom_op`s (forward returning (y, rstd), backward returning (dx, dw)) with
# `register_fake` for both and `register_autograd` on the forward; Triton kernels inside
# spec: shipped:train_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _fwd(x_ptr, w_ptr, y_ptr, rstd_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * n + cols, x * rstd * tl.load(w_ptr + cols, mask=mask, other=0.0), mask=mask)


@triton.jit
def _bwd(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, dw_ptr, rows, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in range(rows):
        x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * n + cols, mask=mask, other=0.0)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd
        wdy = w * dy
        tl.store(dx_ptr + row * n + cols, rstd * (wdy - xhat * tl.sum(wdy * xhat, axis=0) / n), mask=mask)
        dw += dy * xhat
    tl.store(dw_ptr + cols, dw, mask=mask)


@torch.library.custom_op("kernelevolve_good::rmsnorm_fwd", mutates_args=())
def rmsnorm_fwd(x: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    rows, n = x.shape
    y = torch.empty_like(x)
    rstd = x.new_empty(rows)
    _fwd[(rows,)](x, w, y, rstd, n, eps, BLOCK=triton.next_power_of_2(n))
    return y, rstd


@rmsnorm_fwd.register_fake
def _(x, w, eps):
    return torch.empty_like(x), x.new_empty(x.shape[0])


@torch.library.custom_op("kernelevolve_good::rmsnorm_bwd", mutates_args=())
def rmsnorm_bwd(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows, n = x.shape
    dx = torch.empty_like(x)
    dw = torch.empty_like(w)
    _bwd[(1,)](dy, x, w, rstd, dx, dw, rows, n, BLOCK=triton.next_power_of_2(n))
    return dx, dw


@rmsnorm_bwd.register_fake
def _(dy, x, w, rstd):
    return torch.empty_like(x), torch.empty_like(w)


def _setup(ctx, inputs, output):
    x, w, _ = inputs
    ctx.save_for_backward(x, w, output[1])


def _backward(ctx, dy, _drstd):
    x, w, rstd = ctx.saved_tensors
    dx, dw = rmsnorm_bwd(dy.contiguous(), x, w, rstd)
    return dx, dw, None


rmsnorm_fwd.register_autograd(_backward, setup_context=_setup)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y, _ = rmsnorm_fwd(x.reshape(-1, shape[-1]).contiguous(), self.weight, self.eps)
        return y.view(shape)
