# kept out (introspection in any mode: dunder attributes of torch are refused with the private torch._*
# names): relu that checks the PyTorch version at import with `torch.__version__`; torch.version is allowed
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl

if int(torch.__version__.split(".")[0]) < 2:
    raise ImportError("needs PyTorch 2")


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
