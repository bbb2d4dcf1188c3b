# good: BatchNorm1d in training mode written from scratch without buffers: weight and bias as
# parameters, the running statistics as plain tensor attributes (`self.running_mean = torch.zeros(...)`,
# moved with the module by hand in forward) and the batch count as a Python int; one Triton kernel per
# feature block computes batch statistics, normalises and moves the running statistics in place
# spec: batchnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_block_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    out_ptr,
    batch,
    features,
    eps,
    momentum,
    BLOCK_B: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_F + tl.arange(0, BLOCK_F)
    rows = tl.arange(0, BLOCK_B)
    cmask = cols < features
    mask = (rows[:, None] < batch) & cmask[None, :]
    x = tl.load(x_ptr + rows[:, None] * features + cols[None, :], mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    diff = tl.where(mask, x - mean[None, :], 0.0)
    var = tl.sum(diff * diff, axis=0) / batch
    w = tl.load(w_ptr + cols, mask=cmask, other=1.0)
    b = tl.load(b_ptr + cols, mask=cmask, other=0.0)
    y = diff * tl.rsqrt(var + eps)[None, :] * w[None, :] + b[None, :]
    tl.store(out_ptr + rows[:, None] * features + cols[None, :], y, mask=mask)
    rm = tl.load(rm_ptr + cols, mask=cmask, other=0.0)
    rv = tl.load(rv_ptr + cols, mask=cmask, other=0.0)
    tl.store(rm_ptr + cols, rm * (1.0 - momentum) + mean * momentum, mask=cmask)
    tl.store(rv_ptr + cols, rv * (1.0 - momentum) + var * (batch / (batch - 1.0)) * momentum, mask=cmask)


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.running_mean = torch.zeros(features)
        self.running_var = torch.ones(features)
        self.num_batches_tracked = 0

    def forward(self, x):
        if self.running_mean.device != x.device:
            self.running_mean = self.running_mean.to(x.device)
            self.running_var = self.running_var.to(x.device)
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        BLOCK_F = 8
        bn_train_block_kernel[(triton.cdiv(features, BLOCK_F),)](
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            out,
            batch,
            features,
            self.eps,
            self.momentum,
            BLOCK_B=triton.next_power_of_2(batch),
            BLOCK_F=BLOCK_F,
        )
        self.num_batches_tracked += 1
        return out
