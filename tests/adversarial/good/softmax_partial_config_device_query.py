# good: row softmax whose block size comes from a functools.partial'd helper with per-dtype constexprs,
# device properties queried through torch.cuda (guarded by is_available) and a torch.backends flag read
# (not set) in __init__; the launch takes the config dict as **cfg
# spec: softmax
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_stride, out_stride, cols, BLOCK: tl.constexpr, ACC_FP32: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    if ACC_FP32:
        x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def _num_warps(block, multiprocessors):
    base = 8 if block >= 2048 else 4
    return base if multiprocessors >= 64 else max(1, base // 2)


def _config(cols, dtype, multiprocessors):
    block = triton.next_power_of_2(cols)
    return {
        "BLOCK": block,
        "ACC_FP32": dtype != torch.float32,
        "num_warps": _num_warps(block, multiprocessors),
    }


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            self.multiprocessors = props.multi_processor_count
            self.tf32 = torch.backends.cuda.matmul.allow_tf32
        else:
            self.multiprocessors = 1
            self.tf32 = False
        self.config = functools.partial(_config, multiprocessors=self.multiprocessors)

    def forward(self, x):
        rows, cols = x.shape
        out = torch.empty_like(x)
        cfg = self.config(cols, x.dtype)
        softmax_kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, **cfg)
        return out
