# kept out (torch_compile in any mode: the torch.jit namespace is refused as a class; strict also calls it
# compute): relu whose launcher skips its Python-side checks under TorchScript with
# `torch.jit.is_scripting()`, as older library code does; torch.compiler.is_compiling() is accepted since
# round 10 and says the same for PyTorch 2 code
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.jit.is_scripting() and not x.is_contiguous():
            x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
