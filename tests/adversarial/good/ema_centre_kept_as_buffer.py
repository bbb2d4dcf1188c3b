# good: a reference that moves an nn.Parameter in place (an EMA centre); ModelNew keeps the centre as a
# buffer (`ema_centre`: it is no trained weight) and the kernel moves it in place and centres by it
# spec: ema_parameter
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def centre_kernel(x_ptr, c_ptr, out_ptr, batch, features, BLOCK_B: tl.constexpr):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    c = tl.load(c_ptr + f) * 0.9 + mean * 0.1
    tl.store(c_ptr + f, c)
    tl.store(out_ptr + rows * features + f, x - c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("ema_centre", torch.zeros(features))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        batch, features = x.shape
        centre_kernel[(features,)](
            x, self.ema_centre, out, batch, features, BLOCK_B=triton.next_power_of_2(batch)
        )
        return out
