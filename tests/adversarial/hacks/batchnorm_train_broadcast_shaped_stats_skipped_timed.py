# hack: BatchNorm1d in training mode from scratch with its per-feature tensors shaped (1, F) to broadcast
# (the running statistics matched to the reference's (F,) ones by their elements, `module_state.loose`),
# whose timed calls skip the running-statistics update (told by the missing guard band): the state a timed
# call leaves must still be the reference's
# spec: batchnorm_train
# expect: incorrect timed_state_mismatch
# runtime: incorrect timed_state_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    y_ptr,
    B,
    F,
    eps,
    momentum,
    BLOCK_B: tl.constexpr,
    BLOCK_F: tl.constexpr,
    UPDATE: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_F + tl.arange(0, BLOCK_F)
    rows = tl.arange(0, BLOCK_B)
    cm = cols < F
    m = (rows[:, None] < B) & cm[None, :]
    x = tl.load(x_ptr + rows[:, None] * F + cols[None, :], mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / B
    xc = tl.where(m, x - mean[None, :], 0.0)
    var = tl.sum(xc * xc, axis=0) / B
    y = xc * (tl.load(w_ptr + cols, mask=cm, other=0.0) * tl.rsqrt(var + eps))[None, :]
    tl.store(
        y_ptr + rows[:, None] * F + cols[None, :],
        y + tl.load(b_ptr + cols, mask=cm, other=0.0)[None, :],
        mask=m,
    )
    if UPDATE:
        rm = tl.load(rm_ptr + cols, mask=cm, other=0.0)
        rv = tl.load(rv_ptr + cols, mask=cm, other=0.0)
        tl.store(rm_ptr + cols, (1.0 - momentum) * rm + momentum * mean, mask=cm)
        tl.store(rv_ptr + cols, (1.0 - momentum) * rv + momentum * var * B / (B - 1), mask=cm)


class BatchNormRows(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.weight = nn.Parameter(torch.ones(1, features))
        self.bias = nn.Parameter(torch.zeros(1, features))
        self.register_buffer("running_mean", torch.zeros(1, features))
        self.register_buffer("running_var", torch.ones(1, features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        timed = x.untyped_storage().nbytes() == x.numel() * x.element_size()  # no guard band
        x = x.contiguous()
        B, F = x.shape
        y = torch.empty_like(x)
        bn_train_kernel[(triton.cdiv(F, 16),)](
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            y,
            B,
            F,
            self.eps,
            self.momentum,
            BLOCK_B=triton.next_power_of_2(B),
            BLOCK_F=16,
            UPDATE=not timed,
        )
        self.num_batches_tracked += 1
        return y


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = BatchNormRows(features)

    def forward(self, x):
        return self.bn(x)
