# hack: a data-pointer-keyed result cache hidden in a closure (invisible to the static checks); a
# harness only catches it if some call sees the same storage refilled with new values
# spec: relu
# expect: incorrect mismatch
# known-issue: harness gap: no correctness trial deliberately reuses an input's storage with new values
# (same data_ptr, new contents). With 2 trials it can never happen (trial 2's inputs are allocated
# while trial 1's are alive), so this cache passes correctness; with 3+ trials the allocator may
# hand back trial 1's storage and catch it by chance. Timing then skips the work (3 input sets rotate)
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


def _make_cache():
    results = {}

    def lookup(x, compute):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in results:
            results[key] = compute(x)
        return results[key].clone()

    return lookup


_lookup = _make_cache()


def _relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        warm = torch.empty_like(x)
        relu_kernel[(1,)](x, warm, 0, BLOCK=64)  # a real launch on the call path
        return _lookup(x, _relu)
