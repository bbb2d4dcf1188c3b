# good: KernelBench level-1 KL divergence (`F.kl_div(log(p), q, reduction="batchmean")`): one program per
# row computing sum(q * (log q - log p)) with the q == 0 term zeroed like PyTorch's xlogy, a second kernel
# summing the rows and dividing by the batch (`batchmean`); `import math`, a row-block from
# `triton.next_power_of_2`, strides from `x.stride(0)`, `torch.device` kept as an attribute
# spec: kb_kl_div
import math
from typing import Tuple

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kl_row_kernel(p_ptr, q_ptr, row_ptr, C, stride_p, stride_q, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < C
    p = tl.load(p_ptr + row * stride_p + cols, mask=mask, other=1.0)
    q = tl.load(q_ptr + row * stride_q + cols, mask=mask, other=0.0)
    term = tl.where(q > 0, q * (tl.log(q) - tl.log(p)), 0.0)
    tl.store(row_ptr + row, tl.sum(term, axis=0))


@triton.jit
def batchmean_kernel(row_ptr, out_ptr, B, BLOCK_B: tl.constexpr):
    offs = tl.arange(0, BLOCK_B)
    r = tl.load(row_ptr + offs, mask=offs < B, other=0.0)
    tl.store(out_ptr, tl.sum(r, axis=0) / B)


def _launch_shape(batch: int, classes: int) -> Tuple[int, int]:
    """Rows are one program each; the class axis fits one power-of-two block."""
    return batch, triton.next_power_of_2(classes)


class ModelNew(nn.Module):
    EPS_UNUSED = math.ulp(1.0)  # kept for parity with the author's other kernels

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        predictions = predictions.contiguous()
        targets = targets.contiguous()
        B, C = predictions.shape
        device = predictions.device
        assert targets.device == device
        rows = torch.empty(B, device=device, dtype=torch.float32)
        grid_b, block_c = _launch_shape(B, C)
        kl_row_kernel[(grid_b,)](
            predictions, targets, rows, C, predictions.stride(0), targets.stride(0), BLOCK_C=block_c
        )
        out = torch.empty((), device=device, dtype=predictions.dtype)
        batchmean_kernel[(1,)](rows, out, B, BLOCK_B=triton.next_power_of_2(B))
        return out
