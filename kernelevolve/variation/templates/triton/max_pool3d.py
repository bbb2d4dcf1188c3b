# kernelevolve-template: name=max_pool3d family=max_pool3d backend=triton
"""nn.MaxPool3d(kernel_size, stride, padding, dilation, return_indices, ceil_mode) (KernelBench 43 form).

Each window argument may be an int or a (d, h, w) triple; stride None means kernel_size, as in
PyTorch, and output sizes follow PyTorch's rule (ceil_mode drops a last window that would start in
the right padding). One program per BLOCK_SIZE outputs of the flattened (N*C, D_out, H_out, W_out)
result; each output walks its dilated window with padding read as -inf, a NaN wins and ties keep the
first tap, as in PyTorch. Kernel sizes are constexpr so the width taps unroll. Coordinates are int32
(cheap per tap) while every output and in-plane index fits; the plane offset is always int64, as
KernelBench's inputs reach 2**31 elements; WIDE indexes in int64 throughout when an index could pass
int32.
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
def _max_pool3d_kernel(
    x_ptr,
    y_ptr,
    idx_ptr,
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
    dil_d,
    dil_h,
    dil_w,
    KERNEL_D: tl.constexpr,
    KERNEL_H: tl.constexpr,
    KERNEL_W: tl.constexpr,
    BLOCK: tl.constexpr,
    WITH_INDICES: tl.constexpr,
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
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_idx = tl.zeros([BLOCK], tl.int64)
    for kd in range(0, KERNEL_D):
        d = d0 + kd * dil_d
        d_ok = ok & (d >= 0) & (d < depth)
        for kh in range(0, KERNEL_H):
            h = h0 + kh * dil_h
            row_ok = d_ok & (h >= 0) & (h < height)
            row = (d * height + h) * width  # index of (d, h, 0) within the plane
            for kw in tl.static_range(KERNEL_W):
                w = w0 + kw * dil_w
                m = row_ok & (w >= 0) & (w < width)
                v = tl.load(x_plane + (row + w), mask=m, other=float("-inf")).to(tl.float32)
                better = (v > best) | (v != v)  # strict: ties keep the first tap; NaN propagates
                best_idx = tl.where(better, row + w, best_idx)
                best = tl.where(better, v, best)
    tl.store(y_ptr + offs, best.to(y_ptr.dtype.element_ty), mask=ok)
    if WITH_INDICES:
        tl.store(idx_ptr + offs, best_idx, mask=ok)


def _triple(value) -> tuple[int, int, int]:
    return (value,) * 3 if isinstance(value, int) else (int(value[0]), int(value[1]), int(value[2]))


def _pooled_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: in ceil mode the last window must start before the right padding."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return max(out, 0)


def _needs_int64(outputs: int, sizes, kernel, padding, dilation) -> bool:
    """Whether an output index (a last block overshoots by < BLOCK_SIZE) or an in-plane tap index
    (every tap lies within size + pad + dilation * (kernel - 1) per dim) can pass int32."""
    tap_extent = math.prod(
        n + p + d * (k - 1) + 1 for n, k, p, d in zip(sizes, kernel, padding, dilation, strict=True)
    )
    return max(outputs + BLOCK_SIZE, tap_extent) > INT32_MAX


class ModelNew(nn.Module):
    def __init__(
        self,
        kernel_size: int,
        stride: int | None = None,
        padding: int = 0,
        dilation: int = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ):
        super().__init__()
        self.kernel = _triple(kernel_size)
        self.stride = _triple(stride) if stride else self.kernel
        self.padding = _triple(padding)
        self.dilation = _triple(dilation)
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        sizes = tuple(x.shape[-3:])
        out_sizes = tuple(
            _pooled_size(n, k, s, p, d, self.ceil_mode)
            for n, k, s, p, d in zip(
                sizes, self.kernel, self.stride, self.padding, self.dilation, strict=True
            )
        )
        y = torch.empty(x.shape[:-3] + out_sizes, dtype=x.dtype, device=x.device)
        indices = torch.empty(y.shape if self.return_indices else (1,), dtype=torch.int64, device=x.device)
        if y.numel() > 0:
            wide = _needs_int64(y.numel(), sizes, self.kernel, self.padding, self.dilation)
            (kd, kh, kw), (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = (
                self.kernel, self.stride, self.padding, self.dilation
            )  # fmt: skip
            _max_pool3d_kernel[(triton.cdiv(y.numel(), BLOCK_SIZE),)](
                x, y, indices, y.numel(), *sizes, *out_sizes, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                KERNEL_D=kd, KERNEL_H=kh, KERNEL_W=kw, BLOCK=BLOCK_SIZE, WITH_INDICES=self.return_indices,
                WIDE=wide, num_warps=NUM_WARPS,
            )  # fmt: skip
        if self.return_indices:
            return y, indices
        return y
