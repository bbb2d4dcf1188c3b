# good: per-row symmetric int8 quantisation of bf16 activations: the row's absolute maximum in fp32,
# the scale clamped, round half away from zero (torch.round ties differ only at exact halves, within the
# spec's tolerance of 1) and clamp, the int8 output written by the kernel
# spec: shipped:quantize_int8
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def quantize_kernel(x_ptr, q_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-5)
    y = x * (127.0 / amax)
    y = tl.where(y >= 0, tl.floor(y + 0.5), tl.ceil(y - 0.5))
    y = tl.minimum(tl.maximum(y, -127.0), 127.0)
    tl.store(q_ptr + row * cols + offs, y.to(tl.int8), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        cols = x.shape[-1]
        q = torch.empty(x.shape, dtype=torch.int8, device=x.device)
        quantize_kernel[(x.numel() // cols,)](x, q, cols, BLOCK=triton.next_power_of_2(cols))
        return q
