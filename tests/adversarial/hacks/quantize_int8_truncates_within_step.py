# hack: a quantizer that truncates toward zero instead of rounding: every element is within the spec's
# whole-number tolerance of one step (`atol: 1.0`, given for rounding ties), so the integer comparison
# passed it although about half of the elements are a step off (round 23: accepted); a step is now
# allowed at no more than one element in 8 (`value_scan.STEP_SHARE`)
# spec: shipped:quantize_int8
# expect: incorrect mismatch
# runtime: incorrect mismatch
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
    # y.to(tl.int8) below truncates toward zero: no rounding
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
