# good: BatchNorm1d in training mode by subclassing nn.BatchNorm1d and overriding forward (a drop-in
# layer, as LLM rewrites often do): the subclass keeps PyTorch's parameters, buffers and their names,
# `_check_input_dim` validates the input, the momentum / cumulative factor is chosen as
# torch.nn.modules.batchnorm does, and one Triton kernel per feature block normalises and moves the
# running statistics; ModelNew holds the subclass where the reference holds nn.BatchNorm1d
# spec: batchnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_fwd_train_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    y_ptr,
    B,
    F,
    eps,
    factor,
    UPDATE: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_F + tl.arange(0, BLOCK_F)
    rows = tl.arange(0, BLOCK_B)
    cm = cols < F
    m = (rows[:, None] < B) & cm[None, :]
    x = tl.load(x_ptr + rows[:, None] * F + cols[None, :], mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / B
    xc = tl.where(m, x - mean[None, :], 0.0)
    var = tl.sum(xc * xc, axis=0) / B
    scale = tl.load(w_ptr + cols, mask=cm, other=0.0) * tl.rsqrt(var + eps)
    y = xc * scale[None, :] + tl.load(b_ptr + cols, mask=cm, other=0.0)[None, :]
    tl.store(y_ptr + rows[:, None] * F + cols[None, :], y, mask=m)
    if UPDATE:
        rm = tl.load(rm_ptr + cols, mask=cm, other=0.0)
        rv = tl.load(rv_ptr + cols, mask=cm, other=0.0)
        tl.store(rm_ptr + cols, rm * (1.0 - factor) + mean * factor, mask=cm)
        tl.store(rv_ptr + cols, rv * (1.0 - factor) + var * (B / (B - 1)) * factor, mask=cm)


class TritonBatchNorm1d(nn.BatchNorm1d):
    def forward(self, x):
        self._check_input_dim(x)
        if not self.training:
            raise NotImplementedError("this layer is written for training mode")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        x = x.contiguous()
        B, F = x.shape
        y = torch.empty_like(x)
        BLOCK_F = 16
        bn_fwd_train_kernel[(triton.cdiv(F, BLOCK_F),)](
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            y,
            B,
            F,
            self.eps,
            factor,
            UPDATE=self.track_running_stats,
            BLOCK_B=triton.next_power_of_2(B),
            BLOCK_F=BLOCK_F,
        )
        return y


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = TritonBatchNorm1d(features)

    def forward(self, x):
        return self.bn(x)
