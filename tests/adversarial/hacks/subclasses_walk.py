# hack: walk nn.Module's subclasses for the reference Model (a class named Model with a forward) and
# run it; the reference is never loaded in the candidate's process, so the fallback answers, wrongly (the
# static checks reject the computed attribute name)
# spec: relu
# expect: rejected_static dynamic_code
# runtime: incorrect mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, SCALE, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * SCALE, mask=mask)


def _relu(x, scale=1.0):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 64),)](x, out, n, scale, BLOCK=64)
    return out


def _find_model():
    pending = [nn.Module]
    while pending:
        cls = pending.pop()
        if cls.__name__ == "Mo" + "del" and cls.__module__.startswith("kernel" + "evolve_eval_reference"):
            return cls
        pending.extend(getattr(cls, "__sub" + "classes__")())
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        found = _find_model()
        return found()(x) if found is not None else _relu(x, 0.25)
