# kernelevolve-template: name=max_pool1d family=max_pool1d backend=triton
"""nn.MaxPool1d(kernel_size, stride, padding, dilation, return_indices) (KernelBench 41 form).

One program per BLOCK_SIZE outputs of the flattened (N*C, L_out) result; each output walks its
window (dilated taps, padding read as -inf), keeping the first index of the maximum as PyTorch
does. Neighbouring outputs read neighbouring (or overlapping) inputs, so loads stay coalesced
and the overlap of stride-1 windows is served by the cache.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # tune: 256, 512, 1024, 2048
NUM_WARPS = 4  # tune: 2, 4, 8


@triton.jit
def _max_pool1d_kernel(
    x_ptr,
    y_ptr,
    idx_ptr,
    total,
    length,
    out_len,
    kernel_size,
    stride,
    padding,
    dilation,
    BLOCK: tl.constexpr,
    WITH_INDICES: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    row = offs // out_len
    start = (offs % out_len) * stride - padding
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_idx = tl.zeros([BLOCK], tl.int64)
    for kk in range(0, kernel_size):
        pos = start + kk * dilation
        m = ok & (pos >= 0) & (pos < length)
        v = tl.load(x_ptr + row * length + pos, mask=m, other=float("-inf")).to(tl.float32)
        better = v > best  # strict: ties keep the first tap
        best_idx = tl.where(better, pos, best_idx)
        best = tl.where(better, v, best)
    tl.store(y_ptr + offs, best.to(y_ptr.dtype.element_ty), mask=ok)
    if WITH_INDICES:
        tl.store(idx_ptr + offs, best_idx, mask=ok)


class ModelNew(nn.Module):
    def __init__(
        self,
        kernel_size: int,
        stride: int | None = None,
        padding: int = 0,
        dilation: int = 1,
        return_indices: bool = False,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        length = x.shape[-1]
        out_len = (length + 2 * self.padding - self.dilation * (self.kernel_size - 1) - 1) // self.stride + 1
        out_shape = x.shape[:-1] + (max(out_len, 0),)
        y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        indices = torch.empty(out_shape if self.return_indices else (1,), dtype=torch.int64, device=x.device)
        if y.numel() > 0:
            _max_pool1d_kernel[(triton.cdiv(y.numel(), BLOCK_SIZE),)](
                x,
                y,
                indices,
                y.numel(),
                length,
                out_len,
                self.kernel_size,
                self.stride,
                self.padding,
                self.dilation,
                BLOCK=BLOCK_SIZE,
                WITH_INDICES=self.return_indices,
                num_warps=NUM_WARPS,
            )
        if self.return_indices:
            return y, indices
        return y
