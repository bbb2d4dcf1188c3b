# kept out (patching, static; dispatcher_patched with the static checks off): torch.library registers a
# kernel with PyTorch's dispatcher, refused as a class in every mode (threat model; blueteam11/12 kept out
# the same form for other specs). The RMSNorm training spec in PyTorch's custom-op form:
# `torch.library.custom_op` for the forward (returning y and the fp32 rstd) and for the backward,
# `register_fake` for both and `register_autograd` with a setup_context saving x, weight and rstd; each op
# launches Triton kernels
# spec: shipped:train_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * N + cols, x * rstd * tl.load(w_ptr + cols, mask=mask, other=0.0), mask=mask)


@triton.jit
def rms_bwd_kernel(x_ptr, w_ptr, dy_ptr, rstd_ptr, dx_ptr, pw_ptr, N, BLOCK: tl.constexpr):
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
    tl.store(pw_ptr + row * N + cols, dy * x * rstd, mask=mask)


@triton.jit
def col_sum_kernel(p_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr):
    col = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for s in range(0, M, BLOCK_M):
        acc += tl.load(p_ptr + (s + rows) * N + col, mask=s + rows < M, other=0.0)
    tl.store(out_ptr + col, tl.sum(acc, axis=0))


@torch.library.custom_op("kev_blue18::rmsnorm_fwd", mutates_args=())
def rmsnorm_fwd(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, N = x2.shape
    y = torch.empty_like(x2)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    rms_fwd_kernel[(M,)](x2, weight, y, rstd, N, eps, BLOCK=triton.next_power_of_2(N))
    return y.view(x.shape), rstd


@rmsnorm_fwd.register_fake
def _(x, weight, eps):
    return torch.empty_like(x), x.new_empty(x.numel() // x.shape[-1], dtype=torch.float32)


@torch.library.custom_op("kev_blue18::rmsnorm_bwd", mutates_args=())
def rmsnorm_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, N = x2.shape
    dy2 = dy.reshape(M, N).contiguous()
    dx = torch.empty_like(x2)
    partial = torch.empty((M, N), device=x.device, dtype=torch.float32)
    rms_bwd_kernel[(M,)](x2, weight, dy2, rstd, dx, partial, N, BLOCK=triton.next_power_of_2(N))
    dw = torch.empty_like(weight)
    col_sum_kernel[(N,)](partial, dw, M, N, BLOCK_M=16)
    return dx.view(x.shape), dw


@rmsnorm_bwd.register_fake
def _(dy, x, weight, rstd):
    return torch.empty_like(x), torch.empty_like(weight)


def _setup_context(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = rmsnorm_bwd(dy, x, weight, rstd)
    return dx, dw, None


rmsnorm_fwd.register_autograd(_backward, setup_context=_setup_context)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y, _ = rmsnorm_fwd(x, self.weight, self.eps)
        return y
