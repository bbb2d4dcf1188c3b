# good: BatchNorm1d + ReLU as a training spec written from scratch with gamma and beta shaped (1, F) to
# broadcast against the (B, F) batch (nn.Parameter(torch.ones(1, F))), the running statistics registered
# (1, F) buffers, the count an int64 buffer: an autograd.Function whose forward kernel normalises by the
# batch statistics with ReLU, saves mean and rstd and moves the running statistics; its backward kernel
# writes dx and (1, F)-shaped dgamma / dbeta
# spec: kb_batchnorm_relu_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_relu_fwd_kernel(
    x_ptr, g_ptr, b_ptr, rm_ptr, rv_ptr, y_ptr, mean_ptr, rstd_ptr, B, F, eps, momentum, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < B
    x = tl.load(x_ptr + rows * F + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / B
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / B
    rstd = tl.rsqrt(var + eps)
    y = tl.maximum(xc * rstd * tl.load(g_ptr + f) + tl.load(b_ptr + f), 0.0)
    tl.store(y_ptr + rows * F + f, y, mask=mask)
    tl.store(mean_ptr + f, mean)
    tl.store(rstd_ptr + f, rstd)
    tl.store(rm_ptr + f, (1.0 - momentum) * tl.load(rm_ptr + f) + momentum * mean)
    tl.store(rv_ptr + f, (1.0 - momentum) * tl.load(rv_ptr + f) + momentum * var * B / (B - 1))


@triton.jit
def bn_relu_bwd_kernel(
    x_ptr, y_ptr, dy_ptr, g_ptr, mean_ptr, rstd_ptr, dx_ptr, dg_ptr, db_ptr, B, F, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < B
    x = tl.load(x_ptr + rows * F + f, mask=mask, other=0.0)
    y = tl.load(y_ptr + rows * F + f, mask=mask, other=0.0)
    dy = tl.where(mask & (y > 0.0), tl.load(dy_ptr + rows * F + f, mask=mask, other=0.0), 0.0)
    rstd = tl.load(rstd_ptr + f)
    xhat = tl.where(mask, (x - tl.load(mean_ptr + f)) * rstd, 0.0)
    dbeta = tl.sum(dy, axis=0)
    dgamma = tl.sum(dy * xhat, axis=0)
    dx = tl.load(g_ptr + f) * rstd * (dy - (dbeta + xhat * dgamma) / B)
    tl.store(dx_ptr + rows * F + f, dx, mask=mask)
    tl.store(dg_ptr + f, dgamma)
    tl.store(db_ptr + f, dbeta)


class _BatchNormReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta, running_mean, running_var, eps, momentum):
        x = x.contiguous()
        B, F = x.shape
        y = torch.empty_like(x)
        mean = torch.empty(F, device=x.device, dtype=torch.float32)
        rstd = torch.empty(F, device=x.device, dtype=torch.float32)
        bn_relu_fwd_kernel[(F,)](
            x,
            gamma,
            beta,
            running_mean,
            running_var,
            y,
            mean,
            rstd,
            B,
            F,
            eps,
            momentum,
            BLOCK_B=triton.next_power_of_2(B),
        )
        ctx.save_for_backward(x, y, gamma, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, y, gamma, mean, rstd = ctx.saved_tensors
        B, F = x.shape
        dx = torch.empty_like(x)
        dgamma = torch.empty_like(gamma)
        dbeta = torch.empty_like(gamma)
        bn_relu_bwd_kernel[(F,)](
            x,
            y,
            dy.contiguous(),
            gamma,
            mean,
            rstd,
            dx,
            dgamma,
            dbeta,
            B,
            F,
            BLOCK_B=triton.next_power_of_2(B),
        )
        return dx, dgamma, dbeta, None, None, None, None


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.gamma = nn.Parameter(torch.ones(1, features))
        self.beta = nn.Parameter(torch.zeros(1, features))
        self.register_buffer("running_mean", torch.zeros(1, features))
        self.register_buffer("running_var", torch.ones(1, features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        out = _BatchNormReLU.apply(
            x, self.gamma, self.beta, self.running_mean, self.running_var, self.eps, self.momentum
        )
        self.num_batches_tracked.add_(1)
        return out
