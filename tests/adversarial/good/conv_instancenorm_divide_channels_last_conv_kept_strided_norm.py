# good: KernelBench level-2 Conv2d + InstanceNorm2d + divide, LLM style: input and conv output in
# `channels_last` (permissive: the conv by the module), the instance norm + divide in Triton reading the
# NHWC tensor through its strides, one program per (n, c), the output made `torch.empty_like` (channels_last)
# spec: kb_conv_instancenorm_divide
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def instnorm_div_kernel(x_ptr, out_ptr, C, H, W, sn, sc, sh, sw, eps, inv_div, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = pid // C
    c = pid % C
    offs = tl.arange(0, BLOCK)
    mask = offs < H * W
    ptrs = n * sn + c * sc + (offs // W) * sh + (offs % W) * sw
    x = tl.load(x_ptr + ptrs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / (H * W)
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / (H * W)
    tl.store(out_ptr + ptrs, d / tl.sqrt(var + eps) * inv_div, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divide_by):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.instance_norm = nn.InstanceNorm2d(out_channels)
        self.divide_by = divide_by

    def forward(self, x):
        x = x.to(memory_format=torch.channels_last)
        y = self.conv(x)
        N, C, H, W = (int(s) for s in y.shape)
        out = torch.empty_like(y)
        sn, sc, sh, sw = y.stride()
        instnorm_div_kernel[(N * C,)](
            y,
            out,
            C,
            H,
            W,
            sn,
            sc,
            sh,
            sw,
            self.instance_norm.eps,
            1.0 / self.divide_by,
            BLOCK=triton.next_power_of_2(H * W),
        )
        return out
