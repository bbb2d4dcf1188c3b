# good: row softmax where the launch is built by a helper returning a tuple (a functools.partial over a
# kernel picked from a module-level table, and its grid), forward takes its inputs as *inputs, and rows
# are read through a strided view (the input transposed twice)
# spec: softmax
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_small(x_ptr, out_ptr, x_stride, out_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_online(x_ptr, out_ptr, x_stride, out_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    peak = tl.full((BLOCK,), -float("inf"), tl.float32)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        x = tl.load(x_ptr + row * x_stride + start + offs, mask=start + offs < cols, other=-float("inf"))
        new_peak = tl.maximum(peak, x)
        total = total * tl.exp(peak - new_peak) + tl.where(x == -float("inf"), 0.0, tl.exp(x - new_peak))
        peak = new_peak
    row_max = tl.max(peak, axis=0)
    row_sum = tl.sum(total * tl.exp(peak - row_max), axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        x = tl.load(x_ptr + row * x_stride + start + offs, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row * out_stride + start + offs, tl.exp(x - row_max) / row_sum, mask=mask)


KERNELS = {"small": softmax_small, "online": softmax_online}


def _launch(rows, cols):
    if cols <= 32:
        return functools.partial(KERNELS["small"][(rows,)], BLOCK=triton.next_power_of_2(cols)), (rows,)
    return functools.partial(KERNELS["online"][(rows,)], BLOCK=16), (rows,)


class ModelNew(nn.Module):
    def forward(self, *inputs):
        x = inputs[0].t().t()
        rows, cols = x.shape
        out = torch.empty_like(x)
        launch, _grid = _launch(rows, cols)
        launch(x, out, x.stride(0), out.stride(0), cols)
        return out
