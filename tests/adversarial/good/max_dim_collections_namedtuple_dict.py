# good: torch.max over the last dim, the kernel's two outputs gathered in a dict by a helper and returned
# as a collections.namedtuple (the shape of torch.return_types.max, defined in Python)
# spec: kb_max_with_indices
import collections

import torch
import torch.nn as nn
import triton
import triton.language as tl

MaxOut = collections.namedtuple("MaxOut", ["values", "indices"])


@triton.jit
def row_max_kernel(x_ptr, val_ptr, idx_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=float("-inf"))
    best = tl.max(x, axis=0)
    tl.store(val_ptr + row, best)
    tl.store(idx_ptr + row, tl.min(tl.where(x == best, offs, BLOCK), axis=0).to(tl.int64))


def _row_max(x: torch.Tensor) -> dict:
    out = {
        "values": torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype),
        "indices": torch.empty(x.shape[:-1], device=x.device, dtype=torch.int64),
    }
    cols = x.shape[-1]
    row_max_kernel[(x.numel() // cols,)](
        x, out["values"], out["indices"], cols, BLOCK=triton.next_power_of_2(cols)
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        result = _row_max(x.contiguous())
        return MaxOut(**result)
