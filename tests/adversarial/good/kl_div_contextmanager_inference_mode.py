# good: KL divergence (batchmean) with the launch wrapped in a contextlib.contextmanager helper that
# enters torch.inference_mode() and, on CUDA, the input's device; an __all__, a small launcher class
# and f-string errors; per-row partial sums by one kernel, their mean by a second, a 0-d output
# spec: kb_kl_div
import contextlib
from collections.abc import Iterator

import torch
import torch.nn as nn
import triton
import triton.language as tl

__all__ = ["ModelNew"]


@triton.jit
def kl_rows_kernel(p_ptr, t_ptr, partial_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        m = c < cols
        p = tl.load(p_ptr + row * cols + c, mask=m, other=1.0)
        t = tl.load(t_ptr + row * cols + c, mask=m, other=0.0)
        term = tl.where(t > 0, t * (tl.log(tl.where(t > 0, t, 1.0)) - tl.log(p)), 0.0)
        acc += tl.where(m, term, 0.0)
    tl.store(partial_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def mean_kernel(partial_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for r0 in range(0, rows, BLOCK):
        r = r0 + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + r, mask=r < rows, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / rows)


@contextlib.contextmanager
def kernel_scope(x: torch.Tensor) -> Iterator[None]:
    device = torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext()
    with torch.inference_mode(), device:
        yield


class KLLauncher:
    block = 64

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if predictions.shape != targets.shape or predictions.dim() != 2:
            raise ValueError(
                f"expected two equal 2-D shapes, got {tuple(predictions.shape)}, {tuple(targets.shape)}"
            )
        rows, cols = predictions.shape
        p, t = predictions.contiguous(), targets.contiguous()
        partial = torch.empty(rows, device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=torch.float32)
        kl_rows_kernel[(rows,)](p, t, partial, cols, BLOCK=self.block)
        mean_kernel[(1,)](partial, out, rows, BLOCK=self.block)
        return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.launch = KLLauncher()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        with kernel_scope(predictions):
            return self.launch(predictions, targets)
