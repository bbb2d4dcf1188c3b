# good: BatchNorm1d in training mode; ModelNew builds one nn.BatchNorm1d as a template and keeps a
# `copy.deepcopy` of it as `self.bn` (as code that clones a reference's layer does); the kernel moves the
# copy's running statistics in place and the host counts its batches
# spec: batchnorm_train
import copy

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
    def __init__(self, features):
        super().__init__()
        template = nn.BatchNorm1d(features)
        self.bn = copy.deepcopy(template)

    def forward(self, x):
        bn = self.bn
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        bn_train_kernel[(features,)](
            x, bn.weight, bn.bias, bn.running_mean, bn.running_var, out, batch, features,
            bn.eps, bn.momentum, BLOCK_B=triton.next_power_of_2(batch),
        )  # fmt: skip
        bn.num_batches_tracked += 1
        return out
