# good: LLaMA RMSNorm in bf16 with the launch inside the scoped contexts a library wrapper writes: autocast
# switched off for the block (torch.autocast(..., enabled=False)), torch.cuda.device_of(x), and an NVTX
# range on CUDA (contextlib.nullcontext() elsewhere); the kernel upcasts to fp32, rounds the normalised
# row to bf16 before the weight multiply as the reference does
# spec: shipped:rmsnorm_llama
import contextlib

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    mask = c < cols
    x = tl.load(x_ptr + row * cols + c, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
    h = (x * rstd).to(y_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + c, (w * h).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with (
            torch.autocast(device_type=x.device.type, enabled=False),
            torch.cuda.device_of(x),
            torch.cuda.nvtx.range("rmsnorm_llama") if x.is_cuda else contextlib.nullcontext(),
        ):
            x2 = x.reshape(-1, x.shape[-1]).contiguous()
            rows, cols = x2.shape
            y = torch.empty_like(x2)
            rmsnorm_kernel[(rows,)](x2, self.weight, y, cols, self.eps, BLOCK=triton.next_power_of_2(cols))
            return y.reshape(x.shape)
