# good: KernelBench level-2 Conv2d + InstanceNorm2d (defaults: no affine, no running statistics) + divide,
# all in Triton: an implicit-GEMM convolution (per sample, a tile of output pixels x output channels,
# the reduction over in_channels x kh x kw gathered from the input by index arithmetic, tl.dot in ieee
# fp32), then one program per (sample, channel) plane normalising by its own statistics and dividing
# spec: kb_conv_instancenorm_divide
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_implicit_gemm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    C_in,
    H,
    W,
    C_out,
    OH,
    OW,
    KH: tl.constexpr,
    KW: tl.constexpr,
    BLOCK_P: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    n = tl.program_id(2)
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    oc = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    oh = p // OW
    ow = p % OW
    R = C_in * KH * KW
    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        ic = r // (KH * KW)
        kh = (r // KW) % KH
        kw = r % KW
        a = tl.load(
            x_ptr
            + ((n * C_in + ic[None, :]) * H + oh[:, None] + kh[None, :]) * W
            + ow[:, None]
            + kw[None, :],
            mask=(p[:, None] < OH * OW) & (r[None, :] < R),
            other=0.0,
        )
        w = tl.load(
            w_ptr + oc[None, :] * R + r[:, None], mask=(r[:, None] < R) & (oc[None, :] < C_out), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + oc, mask=oc < C_out, other=0.0)[None, :]
    tl.store(
        y_ptr + (n * C_out + oc[None, :]) * (OH * OW) + p[:, None],
        acc,
        mask=(p[:, None] < OH * OW) & (oc[None, :] < C_out),
    )


@triton.jit
def instance_norm_divide_kernel(y_ptr, out_ptr, HW, eps, divide_by, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < HW
    v = tl.load(y_ptr + plane * HW + offs, mask=mask, other=0.0)
    mean = tl.sum(v, axis=0) / HW
    d = tl.where(mask, v - mean, 0.0)
    var = tl.sum(d * d, axis=0) / HW
    tl.store(out_ptr + plane * HW + offs, d * tl.rsqrt(var + eps) / divide_by, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divide_by):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.instance_norm = nn.InstanceNorm2d(out_channels)
        self.divide_by = divide_by

    def forward(self, x):
        x = x.contiguous()
        n, c_in, h, w = x.shape
        c_out, _, kh, kw = self.conv.weight.shape
        oh, ow = h - kh + 1, w - kw + 1
        y = torch.empty((n, c_out, oh, ow), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(oh * ow, 32), triton.cdiv(c_out, 16), n)
        conv_implicit_gemm_kernel[grid](
            x,
            self.conv.weight,
            self.conv.bias,
            y,
            c_in,
            h,
            w,
            c_out,
            oh,
            ow,
            KH=kh,
            KW=kw,
            BLOCK_P=32,
            BLOCK_C=16,
            BLOCK_R=16,
        )
        out = torch.empty_like(y)
        instance_norm_divide_kernel[(n * c_out,)](
            y, out, oh * ow, self.instance_norm.eps, self.divide_by, BLOCK=triton.next_power_of_2(oh * ow)
        )
        return out
