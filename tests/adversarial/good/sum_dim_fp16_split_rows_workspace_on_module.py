# good: sum over dim 1 of an fp16 (batch, rows, cols) tensor in two stages: stage one writes fp32 partial
# sums of row-chunk tiles into a workspace the module keeps (allocated on first use, reallocated when the
# shape, device or chunk count changes), stage two sums the partials and stores fp16
# spec: kb_half_sum_dim
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sums(x_ptr, ws_ptr, n_rows, n_cols, ROWS_PER: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0)
    chunk = tl.program_id(1)
    n_chunks = tl.num_programs(1)
    rows = chunk * ROWS_PER + tl.arange(0, ROWS_PER)
    cols = tl.arange(0, BLOCK_C)
    ok = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + (b * n_rows + rows[:, None]) * n_cols + cols[None, :], mask=ok, other=0.0)
    tl.store(ws_ptr + (b * n_chunks + chunk) * BLOCK_C + cols, tl.sum(tile.to(tl.float32), axis=0))


@triton.jit
def finish_sums(ws_ptr, out_ptr, n_chunks, n_cols, BLOCK_C: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for c in range(0, n_chunks):
        acc += tl.load(ws_ptr + (b * n_chunks + c) * BLOCK_C + cols)
    tl.store(out_ptr + b * n_cols + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


class ModelNew(nn.Module):
    ROWS_PER = 64

    def __init__(self, dim: int):
        super().__init__()
        assert dim == 1
        self.dim = dim
        self._workspace: torch.Tensor | None = None

    def _get_workspace(self, numel: int, device: torch.device) -> torch.Tensor:
        ws = self._workspace
        if ws is None or ws.numel() < numel or ws.device != device:
            ws = torch.empty(numel, device=device, dtype=torch.float32)
            self._workspace = ws
        return ws

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        batch, rows, cols = x.shape
        block_c = triton.next_power_of_2(cols)
        n_chunks = triton.cdiv(rows, self.ROWS_PER)
        ws = self._get_workspace(batch * n_chunks * block_c, x.device)
        out = torch.empty((batch, cols), device=x.device, dtype=x.dtype)
        partial_sums[(batch, n_chunks)](x, ws, rows, cols, ROWS_PER=self.ROWS_PER, BLOCK_C=block_c)
        finish_sums[(batch,)](ws, out, n_chunks, cols, BLOCK_C=block_c)
        return out
