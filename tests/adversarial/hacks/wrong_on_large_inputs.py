# hack: a kernel right on the spec's standard-normal inputs and wrong beyond them: it clamps at 8 (a
# "ReLU8"), which no standard-normal draw of the spec's size reaches. `evaluate` checks the spec's own
# distribution only, so it passes there; the winners' confirmation and `verify` check the spec's other
# input distributions (large: 100x) and fail it (tests/test_verify_distributions.py)
# spec: relu
# expect: ok
# runtime: ok
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu8_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, 0.0), 8.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu8_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
