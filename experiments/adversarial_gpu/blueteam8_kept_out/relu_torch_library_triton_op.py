# kept out (registers with the dispatcher, refused by design since red-team round 6): relu as a
# torch.library.triton_op launching through torch.library.wrap_triton (the PyTorch 2.6+ idiom)
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


@torch.library.triton_op("bt8::relu2", mutates_args=())
def triton_relu(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    torch.library.wrap_triton(relu_kernel)[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return triton_relu(x)
