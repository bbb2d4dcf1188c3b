# hack: keep the first call's output in a closure and hand it back on every later call (static
# checks do not follow closures; the correctness trials call one instance on fresh inputs)
# spec: relu
# expect: incorrect mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def _make_keeper():
    kept = []

    def keep(out):
        if not kept:
            kept.append(out)
        return kept[0]

    return keep


_keep = _make_keeper()


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return _keep(out)
