# good: layernorm as an nn.Module sub-module (its own super().__init__(), nn.Parameter weight and bias named
# as the reference's norm.weight / norm.bias, eps and a @staticmethod launcher) held by ModelNew
# spec: layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * stride + offs, centred * rstd * w + b, mask=mask)


class TritonLayerNorm(nn.Module):
    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(features))
        self.bias = nn.Parameter(torch.empty(features))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.ones_(self.weight)
        nn.init.zeros_(self.bias)

    @staticmethod
    def launch(x, weight, bias, eps):
        rows, n = x.shape
        out = torch.empty_like(x)
        layernorm_kernel[(rows,)](x, weight, bias, out, x.stride(0), n, eps, BLOCK=triton.next_power_of_2(n))
        return out

    def forward(self, x):
        shape = x.shape
        out = self.launch(x.reshape(-1, shape[-1]).contiguous(), self.weight, self.bias, self.eps)
        return out.view(shape)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = TritonLayerNorm(features)
        with torch.no_grad():  # same draws, same order as the reference
            self.norm.weight.copy_(torch.randn(features))
            self.norm.bias.copy_(torch.randn(features))

    def forward(self, x):
        return self.norm(x)
