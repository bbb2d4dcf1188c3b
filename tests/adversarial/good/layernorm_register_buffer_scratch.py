# good: layernorm that keeps per-row mean/rstd scratch in a non-persistent registered buffer, resized with
# resize_ when the row count changes, and parameters in an nn.ParameterList
# spec: layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, mean_ptr, rstd_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * stride + offs, centred * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        w = torch.ones(features)
        b = torch.zeros(features)
        self.params = nn.ParameterList([nn.Parameter(w), nn.Parameter(b)])
        with torch.no_grad():
            self.params[0].copy_(torch.randn(features))
            self.params[1].copy_(torch.randn(features))
        self.register_buffer("stats", torch.empty(2, 0), persistent=False)

    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        if self.stats.shape[1] != rows or self.stats.device != x.device:
            self.stats = torch.empty(2, rows, device=x.device, dtype=torch.float32)
        out = torch.empty_like(x)
        weight, bias = self.params
        layernorm_kernel[(rows,)](
            x,
            weight,
            bias,
            out,
            self.stats[0],
            self.stats[1],
            x.stride(0),
            n,
            1e-5,
            BLOCK=triton.next_power_of_2(n),
        )
        return out
