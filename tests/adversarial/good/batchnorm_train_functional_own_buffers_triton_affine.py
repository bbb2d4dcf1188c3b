# good: BatchNorm1d in training mode: `F.batch_norm(training=True)` with ModelNew's own running buffers
# (`rm` / `rv`, no weight or bias) normalises and moves the statistics, a Triton kernel applies the affine
# scale and shift (PyTorch compute: permissive mode)
# spec: batchnorm_train
# strict: false
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, features, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    f = offs % features
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = x * tl.load(w_ptr + f, mask=mask, other=1.0) + tl.load(b_ptr + f, mask=mask, other=0.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("rm", torch.zeros(features))
        self.register_buffer("rv", torch.ones(features))

    def forward(self, x):
        normed = F.batch_norm(x, self.rm, self.rv, None, None, training=True, momentum=0.1, eps=1e-5)
        normed = normed.contiguous()
        out = torch.empty_like(normed)
        n = normed.numel()
        affine_kernel[(triton.cdiv(n, 256),)](normed, self.weight, self.bias, out, n, x.shape[1], BLOCK=256)
        return out
