# kept out (blue team 15): rejected state_mismatch in all four modes, by the counterpart rules (the
# next buffer of a shape, in registration order). BatchNorm1d in training mode written flat on ModelNew:
# `gamma` / `beta`, the running statistics as buffers `var_ema` / `mean_ema` registered variance first (the
# reference's BatchNorm registers the mean first), moved in place by the kernel; no batch counter
# spec: batchnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, features, eps, momentum, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / batch
    y = diff * tl.rsqrt(var + eps) * tl.load(w_ptr + f) + tl.load(b_ptr + f)
    tl.store(out_ptr + rows * features + f, y, mask=mask)
    rm = tl.load(rm_ptr + f)
    rv = tl.load(rv_ptr + f)
    tl.store(rm_ptr + f, (1.0 - momentum) * rm + momentum * mean)
    tl.store(rv_ptr + f, (1.0 - momentum) * rv + momentum * var * batch / (batch - 1))


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))
        self.register_buffer("var_ema", torch.ones(features))
        self.register_buffer("mean_ema", torch.zeros(features))
        self.eps = eps
        self.momentum = momentum

    def forward(self, x):
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        bn_train_kernel[(features,)](
            x, self.gamma, self.beta, self.mean_ema, self.var_ema, out, batch, features,
            self.eps, self.momentum, BLOCK_B=triton.next_power_of_2(batch),
        )  # fmt: skip
        return out
