# good: row-wise int8 quantisation of bf16 rows: the row's absolute maximum in fp32 (clamped at 1e-5),
# the inverse scale 127 / amax, round half to even written out (floor, then the tie moved to the even
# side), clamp, int8 store; the launch through a class-level launcher object (class attribute) holding
# its block and a __call__, the output made by torch.empty(..., dtype=torch.int8)
# spec: shipped:quantize_int8
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def quant_rows(x_ptr, q_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-5)
    y = x * (127.0 / amax)
    f = tl.floor(y)
    diff = y - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) != 0.0
    r = tl.where((diff > 0.5) | ((diff == 0.5) & odd), f + 1.0, f)
    r = tl.minimum(tl.maximum(r, -127.0), 127.0)
    tl.store(q_ptr + row * N + cols, r.to(tl.int8), mask=mask)


class RowLauncher:
    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, x):
        x = x.contiguous()
        n = x.shape[-1]
        q = torch.empty(x.shape, dtype=torch.int8, device=x.device)
        self.kernel[(x.numel() // n,)](x, q, n, BLOCK=triton.next_power_of_2(n))
        return q


class ModelNew(nn.Module):
    quantize = RowLauncher(quant_rows)

    def forward(self, x):
        return self.quantize(x)
