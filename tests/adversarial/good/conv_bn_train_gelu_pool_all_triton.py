# good: KernelBench level-2 Conv2d + BatchNorm2d (training mode) + GELU + spatial mean, all in Triton for
# strict mode: a direct convolution (one program per sample and output channel, loops over input
# channels and the kernel window, bias added), then one program per channel takes the batch statistics,
# moves the running statistics in place and fuses normalisation, erf GELU and the per-sample mean
# spec: kb_conv_bn_gelu_pool
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_direct_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, in_channels, out_channels, height, width, oh, ow,
    KS: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    n = tl.program_id(0)
    oc = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    mask = offs < oh * ow
    r = offs // ow
    q = offs % ow
    acc = tl.zeros((BLOCK,), tl.float32)
    for ic in range(in_channels):
        plane = x_ptr + (n * in_channels + ic) * height * width
        for kh in tl.static_range(KS):
            for kw in tl.static_range(KS):
                w = tl.load(w_ptr + ((oc * in_channels + ic) * KS + kh) * KS + kw)
                acc += w * tl.load(plane + (r + kh) * width + (q + kw), mask=mask, other=0.0)
    acc += tl.load(b_ptr + oc)
    tl.store(y_ptr + (n * out_channels + oc) * oh * ow + offs, acc, mask=mask)


@triton.jit
def bn_gelu_pool_kernel(
    y_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, channels, hw, eps, momentum, BLOCK: tl.constexpr
):
    # one program per channel: batch statistics over N x H x W in two passes, then each sample's plane
    # normalised, GELU'd (erf form) and averaged into out[n, c]
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
        v = tl.load(y_ptr + (n * channels + c) * hw + offs, mask=mask, other=0.0)
        z = (v - mean) * scale + shift
        g = 0.5 * z * (1.0 + tl.erf(z * 0.7071067811865476))
        tl.store(out_ptr + n * channels + c, tl.sum(tl.where(mask, g, 0.0), axis=0) / hw)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * sq / (count - 1))


def bn_gelu_pool(y, bn):
    batch, channels, oh, ow = y.shape
    hw = oh * ow
    out = torch.empty(batch, channels, device=y.device, dtype=y.dtype)
    bn_gelu_pool_kernel[(channels,)](
        y, bn.weight, bn.bias, bn.running_mean, bn.running_var, out, batch, channels, hw, bn.eps,
        bn.momentum, BLOCK=triton.next_power_of_2(hw),
    )  # fmt: skip
    bn.num_batches_tracked.add_(1)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        x = x.contiguous()
        conv = self.conv
        batch, in_channels, height, width = x.shape
        ks = conv.kernel_size[0]
        oh, ow = height - ks + 1, width - ks + 1
        y = torch.empty(batch, conv.out_channels, oh, ow, device=x.device, dtype=x.dtype)
        conv2d_direct_kernel[(batch, conv.out_channels)](
            x, conv.weight, conv.bias, y, in_channels, conv.out_channels, height, width, oh, ow,
            KS=ks, BLOCK=triton.next_power_of_2(oh * ow),
        )  # fmt: skip
        return bn_gelu_pool(y, self.bn)
