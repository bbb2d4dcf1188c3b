# good: two-stage sum of squares whose grids come from helpers returning lambdas over the meta-
# parameters: a @staticmethod on the model and a module-level function; partials are fresh per call
# spec: sumsq
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def finish_kernel(partial_ptr, out_ptr, count, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(
        out_ptr + tl.program_id(0), tl.sum(tl.load(partial_ptr + offs, mask=offs < count, other=0.0), axis=0)
    )


def single_program_grid():
    return lambda meta: (1,)


class ModelNew(nn.Module):
    BLOCK = 128

    def __init__(self, n):
        super().__init__()
        self.n = n

    @staticmethod
    def _grid(n):
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
        return grid

    def forward(self, x):
        x = x.contiguous().view(-1)
        n = x.numel()
        blocks = triton.cdiv(n, self.BLOCK)
        partial = torch.empty(blocks, device=x.device, dtype=torch.float32)
        out = torch.empty((), device=x.device, dtype=x.dtype)
        partial_kernel[self._grid(n)](x, partial, n, BLOCK=self.BLOCK)
        finish_kernel[single_program_grid()](partial, out, blocks, BLOCK=triton.next_power_of_2(blocks))
        return out
