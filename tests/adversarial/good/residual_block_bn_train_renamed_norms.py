# good: KernelBench's residual block (two 3x3 convolutions, each followed by BatchNorm2d in training mode)
# all in Triton, its layers named `conv_a` / `norm_a` / `conv_b` / `norm_b` (the reference's `conv1` /
# `bn1` / `conv2` / `bn2`, made in the same order): a direct convolution, then one program per channel
# takes the batch statistics, moves that norm's running statistics in place and fuses the normalisation
# with the ReLU (and, for the second, the residual add)
# spec: kb_residual_block
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv3x3_kernel(x_ptr, w_ptr, y_ptr, channels, height, width, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    oc = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    mask = offs < height * width
    r = offs // width
    q = offs % width
    acc = tl.zeros((BLOCK,), tl.float32)
    for ic in range(channels):
        plane = x_ptr + (n * channels + ic) * height * width
        for kh in tl.static_range(3):
            for kw in tl.static_range(3):
                rr = r + kh - 1
                qq = q + kw - 1
                ok = mask & (rr >= 0) & (rr < height) & (qq >= 0) & (qq < width)
                w = tl.load(w_ptr + ((oc * channels + ic) * 3 + kh) * 3 + kw)
                acc += w * tl.load(plane + rr * width + qq, mask=ok, other=0.0)
    tl.store(y_ptr + (n * channels + oc) * height * width + offs, acc, mask=mask)


@triton.jit
def bn_train_act_kernel(
    y_ptr, res_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, channels, hw, eps, momentum,
    HAS_RES: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < hw
    total = 0.0
    for n in range(batch):
        total += tl.sum(tl.load(y_ptr + (n * channels + c) * hw + offs, mask=mask, other=0.0), axis=0)
    count = batch * hw
    mean = total / count
    sq = 0.0
    for n in range(batch):
        v = tl.load(y_ptr + (n * channels + c) * hw + offs, mask=mask, other=0.0)
        d = tl.where(mask, v - mean, 0.0)
        sq += tl.sum(d * d, axis=0)
    var = sq / count
    scale = tl.rsqrt(var + eps) * tl.load(w_ptr + c)
    shift = tl.load(b_ptr + c)
    for n in range(batch):
        base = (n * channels + c) * hw
        z = (tl.load(y_ptr + base + offs, mask=mask, other=0.0) - mean) * scale + shift
        if HAS_RES:
            z += tl.load(res_ptr + base + offs, mask=mask, other=0.0)
        tl.store(out_ptr + base + offs, tl.maximum(z, 0.0), mask=mask)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * sq / (count - 1))


def conv_bn_relu(x, conv, norm, residual=None):
    batch, channels, height, width = x.shape
    hw = height * width
    block = triton.next_power_of_2(hw)
    y = torch.empty_like(x)
    conv3x3_kernel[(batch, channels)](x, conv.weight, y, channels, height, width, BLOCK=block)
    out = torch.empty_like(x)
    bn_train_act_kernel[(channels,)](
        y, x if residual is None else residual, norm.weight, norm.bias, norm.running_mean, norm.running_var,
        out, batch, channels, hw, norm.eps, norm.momentum, HAS_RES=residual is not None, BLOCK=block,
    )  # fmt: skip
    norm.num_batches_tracked.add_(1)
    return out


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv_a = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm_a = nn.BatchNorm2d(channels)
        self.conv_b = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm_b = nn.BatchNorm2d(channels)

    def forward(self, x):
        x = x.contiguous()
        out = conv_bn_relu(x, self.conv_a, self.norm_a)
        return conv_bn_relu(out, self.conv_b, self.norm_b, residual=x)
