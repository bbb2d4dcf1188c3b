# good: MoE dispatch gather in bf16 through a small launcher object held on the module (a plain class,
# not an nn.Module, built in __init__ with its tile sizes): its __call__ allocates the output, launches
# the row-gather kernel on a 2-D grid and returns (output, grid), of which forward keeps the output
# spec: shipped:moe_gather
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(
    src_ptr, idx_ptr, dst_ptr, n_out, hidden, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < n_out
    src_rows = tl.load(idx_ptr + rows, mask=rmask, other=0).to(tl.int64)
    mask = rmask[:, None] & (cols[None, :] < hidden)
    vals = tl.load(src_ptr + src_rows[:, None] * hidden + cols[None, :], mask=mask)
    tl.store(dst_ptr + rows[:, None].to(tl.int64) * hidden + cols[None, :], vals, mask=mask)


class RowGatherLauncher:
    """Gathers rows of a 2-D tensor by an index vector; keeps only its tile sizes."""

    def __init__(self, block_rows: int, block_cols: int):
        self.block_rows = block_rows
        self.block_cols = block_cols

    def __call__(self, src: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, tuple[int, int]]:
        n_out, hidden = index.numel(), src.shape[1]
        dst = src.new_empty((n_out, hidden))
        grid = (triton.cdiv(n_out, self.block_rows), triton.cdiv(hidden, self.block_cols))
        gather_rows_kernel[grid](
            src, index, dst, n_out, hidden, BLOCK_R=self.block_rows, BLOCK_C=self.block_cols
        )
        return dst, grid


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.gather = RowGatherLauncher(block_rows=4, block_cols=64)

    def forward(self, x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        out, _grid = self.gather(x.contiguous(), order.contiguous())
        return out
