# good: Llama RMSNorm in bf16 with several rows per program: @triton.autotune over ROWS (1, 2, 4) and
# num_warps keyed on the hidden size, stacked on @triton.heuristics choosing BLOCK_N (the row rounded up
# to a power of two); a (ROWS, BLOCK_N) tile, fp32 statistics, the normalised row rounded to bf16 before
# the weight multiplies it, as the reference does; the grid a lambda over the chosen ROWS
# spec: shipped:rmsnorm_llama
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"ROWS": rows}, num_warps=warps) for rows, warps in ((1, 1), (2, 2), (4, 4))],
    key=["n_cols"],
)
@triton.heuristics({"BLOCK_N": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def rmsnorm_rows_kernel(
    x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps, ROWS: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(h * h, axis=1) / n_cols + eps)
    normed = (h * inv[:, None]).to(x_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (w[None, :] * normed).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        out = torch.empty(x2.shape, dtype=torch.promote_types(self.weight.dtype, x.dtype), device=x.device)
        grid = lambda meta: (triton.cdiv(n_rows, meta["ROWS"]),)  # noqa: E731
        rmsnorm_rows_kernel[grid](x2, self.weight, out, n_rows, n_cols, self.eps)
        return out.view(x.shape)
