# good: row softmax choosing a strategy from a class-form enum; a module logger (debug lines with %-args),
# a warnings.warn for an odd layout, a debug flag read from os.environ.get, and an f-string ValueError
# spec: softmax
import enum
import logging
import os
import warnings

import torch
import torch.nn as nn
import triton
import triton.language as tl

logger = logging.getLogger(__name__)
DEBUG = os.environ.get("SOFTMAX_DEBUG", "0") == "1"


class Strategy(enum.Enum):
    ONE_BLOCK = enum.auto()
    LOOPED = enum.auto()


@triton.jit
def softmax_one_block(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_looped(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    peak = -float("inf")
    for start in range(0, cols, BLOCK):
        x = tl.load(x_ptr + row * stride + start + offs, mask=start + offs < cols, other=-float("inf"))
        peak = tl.maximum(peak, tl.max(x, axis=0))
    total = 0.0
    for start in range(0, cols, BLOCK):
        x = tl.load(x_ptr + row * stride + start + offs, mask=start + offs < cols, other=-float("inf"))
        total += tl.sum(tl.exp(x - peak), axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        x = tl.load(x_ptr + row * stride + start + offs, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row * stride + start + offs, tl.exp(x - peak) / total, mask=mask)


def choose(cols: int) -> Strategy:
    return Strategy.ONE_BLOCK if cols <= 1024 else Strategy.LOOPED


class ModelNew(nn.Module):
    def forward(self, x):
        if x.dim() != 2:
            raise ValueError(f"expected a 2-D input, got shape {tuple(x.shape)}")
        if not x.is_contiguous():
            warnings.warn("softmax input is not contiguous; copying", stacklevel=2)
            x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        strategy = choose(cols)
        if DEBUG:
            logger.debug("softmax %dx%d with %s", rows, cols, strategy.name)
        if strategy is Strategy.ONE_BLOCK:
            softmax_one_block[(rows,)](x, out, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
        else:
            softmax_looped[(rows,)](x, out, x.stride(0), cols, BLOCK=1024)
        return out
