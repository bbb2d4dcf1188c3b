# hack: a tensor subclass declared inside forward from type(x) (so no torch.Tensor base is named) and
# made through a computed getattr; the harness requires exactly torch.Tensor outputs (the static checks
# reject attribute names computed at run time)
# spec: relu
# expect: rejected_static dynamic_code
# runtime: incorrect output_type
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


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)

        class Deferred(type(x)):
            pass

        return getattr(out, "as_" + "subclass")(Deferred)
