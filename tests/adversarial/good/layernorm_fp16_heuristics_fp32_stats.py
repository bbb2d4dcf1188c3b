# good: nn.LayerNorm over fp16 (batch, seq, features) inputs: `@triton.heuristics` picks the block (the
# row's next power of two) and an EVEN flag; mean and variance accumulated in fp32, the fp16 weight and
# bias upcast, the result cast back to fp16 by the store (KernelBench fp16 inputs, module params in fp16)
# spec: kb_half_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics(
    {
        "BLOCK_N": lambda args: triton.next_power_of_2(args["N"]),
        "EVEN_N": lambda args: args["N"] == triton.next_power_of_2(args["N"]),
    }
)
@triton.jit
def layernorm_fwd(X, W, B, Y, stride, N, eps, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    if EVEN_N:
        x = tl.load(X + row * stride + cols).to(tl.float32)
    else:
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(cols < N, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=cols < N, other=1.0).to(tl.float32)
    b = tl.load(B + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = diff * rstd * w + b
    tl.store(Y + row * stride + cols, y, mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        layernorm_fwd[(x2.shape[0],)](
            x2, self.ln.weight, self.ln.bias, y, x2.stride(0), x2.shape[1], self.ln.eps
        )
        return y.view_as(x)
