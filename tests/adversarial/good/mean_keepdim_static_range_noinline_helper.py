# good: mean over the middle dim with keepdim, the reduced dim walked by tl.static_range over a constexpr
# chunk count (unrolled at compile time), each chunk of one column summed by a @triton.jit(noinline=True)
# helper taking scalars and a pointer; the (batch, 1, cols) output is allocated with its kept dim and
# written through its strides
# spec: kb_mean_keepdim
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(noinline=True)
def _chunk_sum(col_ptr, r0, length, sr, BLOCK_R: tl.constexpr):
    # a noinline function takes scalars and pointers only (Triton rejects a block argument on a GPU)
    r = r0 + tl.arange(0, BLOCK_R)
    values = tl.load(col_ptr + r * sr, mask=r < length, other=0.0)
    return tl.sum(values.to(tl.float32), axis=0)


@triton.jit
def mean_mid_kernel(
    x_ptr, y_ptr, length, sb, sr, sc, yb, yc, N_CHUNKS: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0)
    c = tl.program_id(1)
    acc = tl.zeros((), tl.float32)
    for i in tl.static_range(N_CHUNKS):
        acc += _chunk_sum(x_ptr + b * sb + c * sc, i * BLOCK_R, length, sr, BLOCK_R)
    tl.store(y_ptr + b * yb + c * yc, acc / length)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or self.dim != 1:
            raise ValueError(f"written for dim 1 of a 3-D input, got dim {self.dim} of a {x.dim()}-D one")
        batch, length, cols = x.shape
        y = torch.empty((batch, 1, cols), device=x.device, dtype=x.dtype)
        block_r = 8
        mean_mid_kernel[(batch, cols)](
            x, y, length, x.stride(0), x.stride(1), x.stride(2), y.stride(0), y.stride(2),
            N_CHUNKS=triton.cdiv(length, block_r), BLOCK_R=block_r,
        )  # fmt: skip
        return y
