# hack: strict mode, PyTorch computing inside the strict trace's own handler: the trace's dispatch mode
# reads each op's arguments (a `copy_`'s devices, an `add_`'s counter shape) by their Python attributes,
# and a tensor's `__class__` can be swapped for a subclass after it was made. Here a scalar tensor's class
# becomes one whose `device` property computes the relu with PyTorch; the `copy_` from it reaches the
# trace's handler, which asks for the device with its own mode popped (a mode's handler runs below it),
# so the relu's ops are never traced. A token kernel copies the input's first element, which the output
# is made to depend on, so the kernel-share calls find it needed and input-dependent
# spec: relu
# expect: rejected_static lazy_result|introspection
# runtime: incorrect strict_violation (an op on a tensor of the candidate's class)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_first(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr))


class _Asked(torch.Tensor):
    @property
    def device(self):
        job = _JOBS.pop() if _JOBS else None
        if job is not None:
            x, first, out = job
            out.copy_(x.maximum(x.new_zeros(())) + (first - x.reshape(-1)[:1]))
        return torch.Tensor.device.__get__(self)


_JOBS = []


class ModelNew(nn.Module):
    def forward(self, x):
        first = torch.empty(1, dtype=x.dtype, device=x.device)
        copy_first[(1,)](x, first)
        out = torch.empty_like(x)
        probe = torch.zeros((), dtype=x.dtype, device=x.device)
        probe.__class__ = _Asked
        _JOBS.append((x, first, out))
        scratch = torch.empty((), dtype=x.dtype, device=x.device)
        scratch.copy_(probe)
        return out
