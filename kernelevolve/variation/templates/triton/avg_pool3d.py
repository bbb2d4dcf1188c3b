# kernelevolve-template: name=avg_pool3d family=avg_pool3d backend=triton
"""nn.AvgPool3d(kernel_size, stride, padding, ceil_mode) (KernelBench 46 form), fp32 accumulation.

Each window argument may be an int or a (d, h, w) triple; stride None means kernel_size, as in
PyTorch. count_include_pad=True (PyTorch's default): padding reads as zero and each window divides
by its extent clipped to the padded input, which is the full kernel volume unless a ceil_mode window
runs past the right padding. One program per BLOCK_SIZE outputs of the flattened (N*C, D_out, H_out,
W_out) result. Kernel sizes are constexpr so the width taps unroll. Coordinates are int32 (cheap per
tap) while every output and in-plane index fits; the plane offset is always int64, as KernelBench's
inputs reach 2**31 elements; WIDE indexes in int64 throughout when an index could pass int32.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # tune: 256, 512, 1024, 2048
NUM_WARPS = 4  # tune: 2, 4, 8
INT32_MAX = 2**31 - 1


@triton.jit
def _avg_pool3d_kernel(
    x_ptr,
    y_ptr,
    total,
    depth,
    height,
    width,
    out_d,
    out_h,
    out_w,
    stride_d,
    stride_h,
    stride_w,
    pad_d,
    pad_h,
    pad_w,
    KERNEL_D: tl.constexpr,
    KERNEL_H: tl.constexpr,
    KERNEL_W: tl.constexpr,
    BLOCK: tl.constexpr,
    WIDE: tl.constexpr,
):
    pid = tl.program_id(0)
    if WIDE:  # output or in-plane indices can pass 2**31: index in int64 throughout
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    ow = offs % out_w
    rest = offs // out_w
    oh = rest % out_h
    rest = rest // out_h
    d0 = (rest % out_d) * stride_d - pad_d
    h0 = oh * stride_h - pad_h
    w0 = ow * stride_w - pad_w
    x_plane = x_ptr + (rest // out_d).to(tl.int64) * depth * height * width  # the input passes 2**31
    acc = tl.zeros([BLOCK], tl.float32)
    for kd in range(0, KERNEL_D):
        d = d0 + kd
        d_ok = ok & (d >= 0) & (d < depth)
        for kh in range(0, KERNEL_H):
            h = h0 + kh
            row_ok = d_ok & (h >= 0) & (h < height)
            row = (d * height + h) * width
            for kw in tl.static_range(KERNEL_W):
                w = w0 + kw
                m = row_ok & (w >= 0) & (w < width)
                acc += tl.load(x_plane + (row + w), mask=m, other=0.0).to(tl.float32)
    # PyTorch's divisor: the window clipped to the padded input (only ceil_mode windows get clipped).
    count = (
        (tl.minimum(d0 + KERNEL_D, depth + pad_d) - d0)
        * (tl.minimum(h0 + KERNEL_H, height + pad_h) - h0)
        * (tl.minimum(w0 + KERNEL_W, width + pad_w) - w0)
    )
    tl.store(y_ptr + offs, (acc / count.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=ok)


def _triple(value) -> tuple[int, int, int]:
    return (value,) * 3 if isinstance(value, int) else (int(value[0]), int(value[1]), int(value[2]))


def _pooled_size(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: in ceil mode the last window must start before the right padding."""
    out = (size + 2 * pad - kernel + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return max(out, 0)


def _needs_int64(outputs: int, sizes, kernel, padding) -> bool:
    """Whether an output index (a last block overshoots by < BLOCK_SIZE) or an in-plane tap index
    (every tap lies within size + pad + kernel - 1 per dim) can pass int32."""
    tap_extent = math.prod(n + p + k for n, k, p in zip(sizes, kernel, padding, strict=True))
    return max(outputs + BLOCK_SIZE, tap_extent) > INT32_MAX


class ModelNew(nn.Module):
    def __init__(
        self, kernel_size: int, stride: int | None = None, padding: int = 0, ceil_mode: bool = False
    ):
        super().__init__()
        self.kernel = _triple(kernel_size)
        self.stride = _triple(stride) if stride else self.kernel
        self.padding = _triple(padding)
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        sizes = tuple(x.shape[-3:])
        out_sizes = tuple(
            _pooled_size(n, k, s, p, self.ceil_mode)
            for n, k, s, p in zip(sizes, self.kernel, self.stride, self.padding, strict=True)
        )
        y = torch.empty(x.shape[:-3] + out_sizes, dtype=x.dtype, device=x.device)
        if y.numel() > 0:
            wide = _needs_int64(y.numel(), sizes, self.kernel, self.padding)
            (kd, kh, kw), (sd, sh, sw), (pd, ph, pw) = self.kernel, self.stride, self.padding
            _avg_pool3d_kernel[(triton.cdiv(y.numel(), BLOCK_SIZE),)](
                x, y, y.numel(), *sizes, *out_sizes, sd, sh, sw, pd, ph, pw,
                KERNEL_D=kd, KERNEL_H=kh, KERNEL_W=kw, BLOCK=BLOCK_SIZE, WIDE=wide, num_warps=NUM_WARPS,
            )  # fmt: skip
        return y
