# good: KernelBench fp16 GELU(tanh) * scale: fp16 loads upcast to fp32, tanh GELU with class-level
# constants (`SQRT_2_OVER_PI = math.sqrt(2 / math.pi)` passed as a float argument), one rounding on the
# fp16 store; `x.view(-1)`, `triton.next_power_of_2` capped block, `torch.empty_like`, early return on an
# empty tensor, dtype assert
# spec: kb_half_gelu_scale
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_tanh_scale_kernel(x_ptr, y_ptr, n, k0, k1, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inner = k0 * (x + k1 * x * x * x)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    y = 0.5 * x * (1.0 + t) * scale
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
    COEFF = 0.044715
    MAX_BLOCK = 1024

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dtype in (torch.float16, torch.bfloat16, torch.float32)
        if x.numel() == 0:
            return x
        flat = x.contiguous().view(-1)
        y = torch.empty_like(flat)
        n = flat.numel()
        block = min(self.MAX_BLOCK, triton.next_power_of_2(n))
        gelu_tanh_scale_kernel[(triton.cdiv(n, block),)](
            flat, y, n, self.SQRT_2_OVER_PI, self.COEFF, float(self.scale), BLOCK=block
        )
        return y.view_as(x)
