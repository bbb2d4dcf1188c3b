# good: layernorm that reshapes, permutes and allocates its way to the launch with many PyTorch view and
# factory ops (empty_strided, new_empty, zeros_like, movedim, unflatten, expand, select, .item() of a
# one-element parameter): none computes, so strict mode's runtime trace must let every one pass
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
    var = tl.sum(centred * centred, axis=0) / n
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * stride + offs, centred * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        with torch.no_grad():  # same draws, same order as the reference
            self.weight.copy_(torch.randn(features))
            self.bias.copy_(torch.randn(features))
        self.register_buffer("eps", torch.full((1,), 1e-5))

    def forward(self, x):
        rows, n = x.shape
        grid = x.movedim(0, 0).unsqueeze(0).squeeze(0).unflatten(1, (1, n)).flatten(1)
        rows_view = grid.select(1, 0).unsqueeze(1).expand(rows, 1)  # a view, never read
        assert rows_view.shape[0] == rows
        src = torch.empty_strided((rows, n), (n, 1), dtype=x.dtype, device=x.device)
        src.copy_(grid)
        scratch = src.new_empty((rows, n))
        out = torch.zeros_like(scratch)
        weight, bias = self.weight.view(-1).contiguous(), self.bias.reshape(n).contiguous()
        layernorm_kernel[(rows,)](
            src, weight, bias, out, src.stride(0), n, self.eps.item(), BLOCK=triton.next_power_of_2(n)
        )
        return out.view(rows, n)
