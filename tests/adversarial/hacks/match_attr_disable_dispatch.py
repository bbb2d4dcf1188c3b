# hack: strict mode; match class patterns read attributes by name (kwd patterns are not Attribute nodes):
# object.__subclasses__ walks to torch._C._DisableTorchDispatch and the input's clamp_min method is taken
# the same way, so PyTorch computes the relu unseen by the runtime trace; a launch on zero elements
# spec: relu
# expect: rejected_static introspection
# runtime: incorrect kernel_work_redundant|kernel_work_input_independent (its strict trace silenced, PyTorch computes: right with the launches left out or replayed)
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


def _find(name):
    pending = [object]
    while pending:
        cls = pending.pop()
        if cls.__name__ == name:
            return cls
        match cls:
            case type(__subclasses__=sub):
                try:  # noqa: SIM105
                    pending.extend(sub())
                except TypeError:
                    pass
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._hidden = _find("_DisableTorchDispatch")

    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        match x:
            case object(clamp_min=op):
                with self._hidden():
                    result = op(0.0)
        return result
