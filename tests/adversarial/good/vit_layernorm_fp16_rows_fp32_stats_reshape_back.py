# good: the shipped ViT LayerNorm (fp16, eps 1e-6) over (batch, tokens, hidden) flattened to rows with
# `reshape(-1, hidden)`: one program per token, fp16 loads upcast, fp32 mean / variance, the affine in
# fp32, one fp16 rounding on store; the output viewed back to the input's shape
# spec: shipped:vit_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_rows_fp16(x_ptr, w_ptr, b_ptr, y_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    x = tl.load(x_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / hidden
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / hidden + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * hidden + cols, (xc * rstd * w + b).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        rows = x.reshape(-1, hidden).contiguous()
        y = torch.empty_like(rows)
        ln_rows_fp16[(rows.shape[0],)](
            rows,
            self.norm.weight,
            self.norm.bias,
            y,
            hidden,
            self.norm.eps,
            BLOCK=triton.next_power_of_2(hidden),
        )
        return y.view(x.shape)
