# kernelevolve-template: name=avg_pool1d family=avg_pool1d backend=triton
"""nn.AvgPool1d(kernel_size, stride, padding) (KernelBench 44 form), fp32 accumulation.

PyTorch's defaults hold: count_include_pad=True and ceil_mode=False, so every window divides by
kernel_size (padding reads as zero). One program per BLOCK_SIZE outputs of the flattened
(N*C, L_out) result; neighbouring outputs read neighbouring inputs, so loads stay coalesced and
the overlap of stride-1 windows is served by the cache.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # tune: 256, 512, 1024, 2048
NUM_WARPS = 4  # tune: 2, 4, 8


@triton.jit
def _avg_pool1d_kernel(
    x_ptr, y_ptr, total, length, out_len, kernel_size, stride, padding, inv_count, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    row = offs // out_len
    start = (offs % out_len) * stride - padding
    acc = tl.zeros([BLOCK], tl.float32)
    for kk in range(0, kernel_size):
        pos = start + kk
        m = ok & (pos >= 0) & (pos < length)
        acc += tl.load(x_ptr + row * length + pos, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (acc * inv_count).to(y_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride else kernel_size
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        length = x.shape[-1]
        out_len = (length + 2 * self.padding - self.kernel_size) // self.stride + 1
        y = torch.empty(x.shape[:-1] + (max(out_len, 0),), dtype=x.dtype, device=x.device)
        if y.numel() > 0:
            _avg_pool1d_kernel[(triton.cdiv(y.numel(), BLOCK_SIZE),)](
                x,
                y,
                y.numel(),
                length,
                out_len,
                self.kernel_size,
                self.stride,
                self.padding,
                1.0 / self.kernel_size,
                BLOCK=BLOCK_SIZE,
                num_warps=NUM_WARPS,
            )
        return y
