# good: BatchNorm1d in training mode; the running statistics live in a small nn.Module of ModelNew's own
# (`RunningStats`, buffers `mu` / `sigma2` and a Python int count of the batches seen) held as `self.stats`,
# the affine parameters on ModelNew; the kernel moves the statistics in place
# spec: batchnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_train_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, features, eps, momentum, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / batch
    y = diff * tl.rsqrt(var + eps) * tl.load(w_ptr + f) + tl.load(b_ptr + f)
    tl.store(out_ptr + rows * features + f, y, mask=mask)
    rm = tl.load(rm_ptr + f)
    rv = tl.load(rv_ptr + f)
    tl.store(rm_ptr + f, (1.0 - momentum) * rm + momentum * mean)
    tl.store(rv_ptr + f, (1.0 - momentum) * rv + momentum * var * batch / (batch - 1))


class RunningStats(nn.Module):
    def __init__(self, features, momentum=0.1):
        super().__init__()
        self.register_buffer("mu", torch.zeros(features))
        self.register_buffer("sigma2", torch.ones(features))
        self.momentum = momentum
        self.seen = 0


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.stats = RunningStats(features)
        self.eps = 1e-5

    def forward(self, x):
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        stats = self.stats
        bn_train_kernel[(features,)](
            x, self.weight, self.bias, stats.mu, stats.sigma2, out, batch, features,
            self.eps, stats.momentum, BLOCK_B=triton.next_power_of_2(batch),
        )  # fmt: skip
        stats.seen += 1
        return out
