# good: int8 weight dequantization on a 2-D grid with @triton.jit(do_not_specialize=["n_cols"]) (one
# compiled kernel for every row length), tl.multiple_of / tl.max_contiguous hints on the column offsets,
# eviction_policy="evict_first" on the streamed weight and "evict_last" on the per-row scale, fp16 out
# spec: shipped:dequantize_int8
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n_cols"])
def dequant_kernel(w_ptr, scale_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c = tl.max_contiguous(tl.multiple_of(c, BLOCK_C), BLOCK_C)
    mask = (r[:, None] < n_rows) & (c[None, :] < n_cols)
    offs = r[:, None] * n_cols + c[None, :]
    w = tl.load(w_ptr + offs, mask=mask, other=0, eviction_policy="evict_first")
    scale = tl.load(scale_ptr + r, mask=r < n_rows, other=0.0, eviction_policy="evict_last")
    out = w.to(tl.float32) * scale.to(tl.float32)[:, None]
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        weight = weight.contiguous()
        rows, cols = weight.shape
        out = torch.empty((rows, cols), device=weight.device, dtype=scale.dtype)
        grid = (triton.cdiv(rows, 4), triton.cdiv(cols, 64))
        dequant_kernel[grid](weight, scale.contiguous(), out, rows, cols, BLOCK_R=4, BLOCK_C=64)
        return out
