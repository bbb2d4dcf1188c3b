# good: KernelBench level-1 depthwise Conv2d (groups = channels) with dilation and padding from the
# module: a direct convolution, one program per (sample, channel) plane, the kernel taps unrolled by
# tl.static_range, padding by masks; the conv's weight and bias read from the module
# spec: kb_depthwise_conv
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def dwconv_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    channels,
    H,
    W,
    OH,
    OW,
    pad,
    dil,
    KS: tl.constexpr,
    BH: tl.constexpr,
    BW: tl.constexpr,
):
    plane = tl.program_id(0)
    c = plane % channels
    oh = tl.arange(0, BH)[:, None]
    ow = tl.arange(0, BW)[None, :]
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for kh in tl.static_range(KS):
        for kw in tl.static_range(KS):
            ih = oh - pad + kh * dil
            iw = ow - pad + kw * dil
            m = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W) & (oh < OH) & (ow < OW)
            x = tl.load(x_ptr + plane * H * W + ih * W + iw, mask=m, other=0.0)
            acc += x * tl.load(w_ptr + c * KS * KS + kh * KS + kw)
    acc += tl.load(b_ptr + c)
    tl.store(out_ptr + plane * OH * OW + oh * OW + ow, acc, mask=(oh < OH) & (ow < OW))


class ModelNew(nn.Module):
    def __init__(self, channels, kernel_size, dilation):
        super().__init__()
        self.conv = nn.Conv2d(
            channels, channels, kernel_size, padding=dilation, dilation=dilation, groups=channels
        )

    def forward(self, x):
        x = x.contiguous()
        conv = self.conv
        batch, channels, H, W = x.shape
        ks, pad, dil = conv.kernel_size[0], conv.padding[0], conv.dilation[0]
        OH = H + 2 * pad - dil * (ks - 1)
        OW = W + 2 * pad - dil * (ks - 1)
        out = torch.empty((batch, channels, OH, OW), device=x.device, dtype=x.dtype)
        dwconv_kernel[(batch * channels,)](
            x,
            conv.weight,
            conv.bias,
            out,
            channels,
            H,
            W,
            OH,
            OW,
            pad,
            dil,
            KS=ks,
            BH=triton.next_power_of_2(OH),
            BW=triton.next_power_of_2(OW),
        )
        return out
