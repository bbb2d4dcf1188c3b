# good: elementwise relu written with import aliases: `from triton import jit as triton_jit`,
# `import triton.language as language`; the decorator is still triton.jit
# spec: relu
# known-issue: Triton 3.6's interpreter (CPU) rejects `BLOCK: language.constexpr` under a module alias
# ("arange's arguments must be of type tl.constexpr"); the static checks and the backend accept the kernel
# known-issue-on: cpu
import torch
import torch.nn as nn
import triton.language as language
from triton import cdiv
from triton import jit as triton_jit


@triton_jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: language.constexpr):
    offs = language.program_id(0) * BLOCK + language.arange(0, BLOCK)
    mask = offs < n
    x = language.load(x_ptr + offs, mask=mask, other=0.0)
    language.store(out_ptr + offs, language.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(cdiv(n, 64),)](x, out, n, BLOCK=64)
        return out
