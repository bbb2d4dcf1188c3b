# good: per-token int8 quantisation of bf16 activations as a two-kernel pipeline: the rows' absolute
# maxima (chunked loop, fp32) go into a workspace the module allocates once per row count and reuses, then
# a second kernel scales by 127 / clamp(amax, 1e-5), rounds half to even with the 1.5 * 2**23 add/subtract
# trick (as torch.round does), clamps and stores int8
# spec: shipped:quantize_int8
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROUND_MAGIC = 12582912.0  # 1.5 * 2**23: adding and subtracting it rounds an fp32 below 2**22 to even


@triton.jit
def row_amax_kernel(x_ptr, amax_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc = tl.maximum(acc, tl.abs(x))
    tl.store(amax_ptr + row, tl.max(acc, axis=0))


@triton.jit
def quantize_rows_kernel(x_ptr, amax_ptr, q_ptr, n_cols, magic, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    inv_scale = 127.0 / tl.maximum(tl.load(amax_ptr + row), 1e-5)
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    v = x * inv_scale
    rounded = (v + magic) - magic
    q = tl.minimum(tl.maximum(rounded, -127.0), 127.0)
    tl.store(q_ptr + row * n_cols + cols, q.to(tl.int8), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._amax: dict[tuple[int, torch.device], torch.Tensor] = {}

    def _workspace(self, rows: int, device: torch.device) -> torch.Tensor:
        key = (rows, device)
        if key not in self._amax:
            self._amax[key] = torch.empty(rows, dtype=torch.float32, device=device)
        return self._amax[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        rows, cols = x2.shape
        amax = self._workspace(rows, x.device)
        row_amax_kernel[(rows,)](x2, amax, cols, BLOCK=256)
        q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
        quantize_rows_kernel[(rows, triton.cdiv(cols, 128))](x2, amax, q, cols, ROUND_MAGIC, BLOCK=128)
        return q.view(x.shape)
