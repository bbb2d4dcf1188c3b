# good: layernorm over the last dimension of any-rank input: flattened to 2-D with reshape and
# contiguous, parameters read through .view(-1), the output allocated flat and viewed back
# spec: layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * n + offs, centred * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)  # holds the parameters, never called
        with torch.no_grad():
            self.norm.weight.copy_(torch.randn(features))
            self.norm.bias.copy_(torch.randn(features))

    def forward(self, x):
        shape = x.shape
        features = shape[-1]
        flat = x.reshape(-1, features).contiguous()
        rows = flat.shape[0]
        out = torch.empty(rows * features, device=x.device, dtype=x.dtype)
        weight = self.norm.weight.view(-1)
        bias = self.norm.bias.contiguous().view(features)
        layernorm_kernel[(rows,)](
            flat, weight, bias, out, features, self.norm.eps, BLOCK=triton.next_power_of_2(features)
        )
        return out.view(shape)
