# hack: strict-mode escape through a custom op: `torch.library.custom_op` defines `kehack::clone` whose
# kernel computes relu in PyTorch; __init__ keeps `torch.ops.kehack.clone` on the instance and forward
# calls it through `self`, so the static call-path checks see a method of unknown kind. The runtime op
# trace sees one op named `clone` (an allowed copy by name; the namespace was not read), and the relu
# inside the custom op's kernel runs below the trace's dispatch mode. A token Triton kernel computes the
# first element (left NaN by the custom op), so the kernel-share checks see needed, input-dependent work.
# spec: relu
# expect: rejected_static patching
# runtime: runtime_error dispatcher_patched
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


@torch.library.custom_op("kehack::clone", mutates_args=())
def _relu_copy(x: torch.Tensor) -> torch.Tensor:
    out = x.clamp_min(0.0)
    out[:1].fill_(float("nan"))  # the one element the token kernel computes
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.copy = torch.ops.kehack.clone

    def forward(self, x):
        out = self.copy(x)
        relu_kernel[(1,)](x, out, 1, BLOCK=64)
        return out
