# hack: a result cache keyed by the input's contents, hidden in a closure; correct on every call, but
# timing rotates only 3 input sets, so every timed call after the first three skips the work
# spec: relu
# strict: false
# expect: ok
# neutralised, not rejected: its outputs are always right, and the harness gives every warm-up and timed
# call fresh inputs, so the cache never hits and the timing is the real work (no gain from the hack)
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


def _make_memo():
    memo = {}

    def run(x, compute):
        key = x.cpu().numpy().tobytes()
        if key not in memo:
            memo[key] = compute(x)
        return memo[key].clone()

    return run


_memo = _make_memo()


def _relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        warm = torch.empty_like(x)
        relu_kernel[(1,)](x, warm, 0, BLOCK=64)  # a real launch on the call path
        return _memo(x, _relu)
