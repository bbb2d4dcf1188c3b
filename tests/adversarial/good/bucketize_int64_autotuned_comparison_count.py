# good: torch.bucketize (right=False) as a comparison count: a value's bucket is the number of boundaries
# strictly below it, summed over boundary chunks from a (values, boundaries) comparison tile; the value
# block autotuned (@triton.autotune keyed on the sizes, three configs); int64 bucket ids stored
# spec: shipped:bucketize
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK_V": v}, num_warps=w) for v, w in ((16, 1), (32, 2), (64, 4))],
    key=["n", "n_bounds"],
)
@triton.jit
def bucket_count_kernel(v_ptr, b_ptr, out_ptr, n, n_bounds, BLOCK_V: tl.constexpr, BLOCK_B: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_V + tl.arange(0, BLOCK_V)
    vmask = offs < n
    v = tl.load(v_ptr + offs, mask=vmask, other=0.0)
    count = tl.zeros((BLOCK_V,), dtype=tl.int64)
    for start in tl.range(0, n_bounds, BLOCK_B):
        bs = start + tl.arange(0, BLOCK_B)
        bounds = tl.load(b_ptr + bs, mask=bs < n_bounds, other=0.0)
        below = (bounds[None, :] < v[:, None]) & (bs[None, :] < n_bounds)
        count += tl.sum(below.to(tl.int64), axis=1)
    tl.store(out_ptr + offs, count, mask=vmask)


class ModelNew(nn.Module):
    def __init__(self, num_boundaries: int):
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(-3.0, 3.0, num_boundaries))

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        flat = values.contiguous().view(-1)
        out = torch.empty(values.shape, dtype=torch.int64, device=values.device)
        n, n_bounds = flat.numel(), self.boundaries.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_V"]),)  # noqa: E731
        bucket_count_kernel[grid](flat, self.boundaries, out, n, n_bounds, BLOCK_B=32)
        return out
