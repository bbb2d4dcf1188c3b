# kernelevolve-template: name=avg_pool2d family=avg_pool2d backend=triton
"""nn.AvgPool2d(kernel_size, stride, padding) (KernelBench 45 form), fp32 accumulation.

Each argument may be an int or an (h, w) pair; stride None means kernel_size, as in PyTorch.
PyTorch's defaults hold (count_include_pad=True, ceil_mode=False), so every window divides by
kernel_h * kernel_w with padding read as zero. One program per BLOCK_SIZE outputs of the
flattened (N*C, H_out, W_out) result; neighbouring outputs read neighbouring inputs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # tune: 256, 512, 1024, 2048
NUM_WARPS = 4  # tune: 2, 4, 8


@triton.jit
def _avg_pool2d_kernel(
    x_ptr,
    y_ptr,
    total,
    height,
    width,
    out_h,
    out_w,
    kernel_h,
    kernel_w,
    stride_h,
    stride_w,
    pad_h,
    pad_w,
    inv_count,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    plane = offs // (out_h * out_w)
    rem = offs % (out_h * out_w)
    h0 = (rem // out_w) * stride_h - pad_h
    w0 = (rem % out_w) * stride_w - pad_w
    plane_base = plane * height * width
    acc = tl.zeros([BLOCK], tl.float32)
    for kh in range(0, kernel_h):
        h = h0 + kh
        row_ok = ok & (h >= 0) & (h < height)
        row_base = plane_base + h * width
        for kw in range(0, kernel_w):
            w = w0 + kw
            m = row_ok & (w >= 0) & (w < width)
            acc += tl.load(x_ptr + row_base + w, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (acc * inv_count).to(y_ptr.dtype.element_ty), mask=ok)


def _pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0):
        super().__init__()
        self.kernel = _pair(kernel_size)
        self.stride = _pair(stride) if stride else self.kernel
        self.padding = _pair(padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        height, width = x.shape[-2], x.shape[-1]
        (kh, kw), (sh, sw), (ph, pw) = self.kernel, self.stride, self.padding
        out_h = max((height + 2 * ph - kh) // sh + 1, 0)
        out_w = max((width + 2 * pw - kw) // sw + 1, 0)
        y = torch.empty(x.shape[:-2] + (out_h, out_w), dtype=x.dtype, device=x.device)
        if y.numel() > 0:
            _avg_pool2d_kernel[(triton.cdiv(y.numel(), BLOCK_SIZE),)](
                x, y, y.numel(), height, width, out_h, out_w, kh, kw, sh, sw, ph, pw, 1.0 / (kh * kw),
                BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS,
            )  # fmt: skip
        return y
