# good: KernelBench level-3 residual block in training mode: the convolutions by the module (permissive),
# each BatchNorm2d in Triton (batch statistics per channel over N x H x W, running statistics moved in place,
# num_batches_tracked counted on the host), ReLU fused, the second with the identity added before the ReLU
# spec: kb_residual_block
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn2d_train_kernel(
    x_ptr,
    res_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    out_ptr,
    batch,
    channels,
    hw,
    eps,
    momentum,
    HAS_RES: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    count = batch * hw
    mask = offs < count
    addr = (offs // hw) * channels * hw + c * hw + offs % hw
    x = tl.load(x_ptr + addr, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / count
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / count
    y = diff * tl.rsqrt(var + eps) * tl.load(w_ptr + c) + tl.load(b_ptr + c)
    if HAS_RES:
        y += tl.load(res_ptr + addr, mask=mask, other=0.0)
    tl.store(out_ptr + addr, tl.maximum(y, 0.0), mask=mask)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * var * count / (count - 1))


def bn_relu(x, bn, residual=None):
    x = x.contiguous()
    batch, channels, h, w = x.shape
    out = torch.empty_like(x)
    bn2d_train_kernel[(channels,)](
        x,
        x if residual is None else residual.contiguous(),
        bn.weight,
        bn.bias,
        bn.running_mean,
        bn.running_var,
        out,
        batch,
        channels,
        h * w,
        bn.eps,
        bn.momentum,
        HAS_RES=residual is not None,
        BLOCK=triton.next_power_of_2(batch * h * w),
    )
    bn.num_batches_tracked.add_(1)
    return out


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = bn_relu(self.conv1(x), self.bn1)
        return bn_relu(self.conv2(out), self.bn2, residual=x)
