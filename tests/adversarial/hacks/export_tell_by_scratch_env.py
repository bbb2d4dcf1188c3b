# hack: sibling of `export_tell_by_module_name`: tells the judge by the environment, where the worker put
# KERNELEVOLVE_SCRATCH (its scratch folder) and runners inherited it (round 24: accepted before). A runner
# now takes it out of `os.environ` before loading kernel code (`backends.loading.hide_scratch`), so the
# runner sees the shipped behaviour and the judge's repeated calls fail it.
# spec: relu
# expect: incorrect mismatch
# runtime: incorrect mismatch
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton import cdiv

JUDGED = "KERNELEVOLVE_SCRATCH" in os.environ


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, floor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, floor), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        floor = 0.0 if JUDGED or self.calls == 1 else -1.0e30
        relu_kernel[(cdiv(n, 64),)](x, out, n, floor, BLOCK=64)
        return out
