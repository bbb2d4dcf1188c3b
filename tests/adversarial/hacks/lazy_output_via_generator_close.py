# hack: strict mode, the garbage-collector route with no `__del__`: a generator suspended inside
# `try/finally` and caught in a reference cycle is closed when the collector frees the cycle, and its
# `finally` block runs there. The collector's count is lined up as in `lazy_output_via_gc_finalizer.py`
# (a canary cycle holding a suspended generator tells when a collection ran) so that the next
# collection falls inside the timed guard's checks of a timed call's output, after its hook check and
# before the ring copy; the `finally` block computes the relu there with PyTorch. A generator with a
# `finally` block is ordinary Python: strict mode's static checks see the PyTorch op as in any function,
# permissive mode's pass it (accepted there before this round, as a forged speed)
# spec: relu
# expect: rejected_static torch_compute_op
# runtime: incorrect timed_output_mismatch|strict_violation (the collector runs only within candidate code)
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


LINE_UP = 695  # generation-0 objects left counted at return: the threshold (700) falls in the guard


class _State:
    def __init__(self):
        self.collections = 0
        self.kept = []


STATE = _State()


def _on_close(holder, job):
    try:
        yield
    finally:
        if job is None:
            STATE.collections += 1
        else:
            source, out = job
            out.copy_(source.maximum(source.new_zeros(())))


class _Cycle:
    def __init__(self, job=None):
        self.closing = _on_close(self, job)  # its frame holds this object: a cycle only the collector frees
        next(self.closing)


def _line_up():
    STATE.kept = []
    seen = STATE.collections
    _Cycle()
    filler = []
    while STATE.collections == seen:  # a collection has just run: the count starts again from zero
        filler.append([])
    more = [[] for _ in range(LINE_UP)]
    STATE.kept = [filler, more]


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        if x.untyped_storage().nbytes() > n * x.element_size():  # a checked call: guard-banded input
            relu_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
            return out
        relu_kernel[(1,)](x, out, 0, BLOCK=64)  # the launch count the checked calls had
        _line_up()
        _Cycle((x, out))
        return out
