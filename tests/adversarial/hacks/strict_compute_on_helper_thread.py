# hack: strict mode; PyTorch computes the relu on a helper thread (logging.handlers.QueueListener, so no
# threading is named) while forward waits for it: the runtime op trace is a TorchDispatchMode, which is
# thread-local; the Triton kernel runs on zero elements. Threads started by the candidate are counted
# spec: relu
# expect: rejected_static thread_spawn
# runtime: runtime_error thread_spawn
import logging
import logging.handlers
import queue

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


def _relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


class _Work(logging.Handler):
    def emit(self, record):
        x, out, done = record.job
        out.copy_(torch.relu(x))
        done.put(True)


_JOBS = queue.SimpleQueue()
_LISTENER = logging.handlers.QueueListener(_JOBS, _Work())
_LISTENER.start()
_LOG = logging.getLogger("kernel-" + "work")
_LOG.addHandler(logging.handlers.QueueHandler(_JOBS))
_LOG.propagate = False


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        done = queue.SimpleQueue()
        _LOG.warning("job", extra={"job": (x, out, done)})
        done.get()
        return out
