# good: BatchNorm1d(momentum=None) in training mode with every step on the device: a one-program Triton
# kernel steps num_batches_tracked (the registered int64 buffer) and the statistics kernel then reads it
# for the cumulative factor 1 / n; the running statistics kept as plain buffers registered by the model
# itself (no nn.BatchNorm1d submodule), in nn.BatchNorm's names
# spec: kb_batchnorm_cumulative
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def step_counter_kernel(count_ptr):
    tl.store(count_ptr, tl.load(count_ptr) + 1)


@triton.jit
def bn_cumulative_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, count_ptr, out_ptr, batch, features, eps, BLOCK_B: tl.constexpr
):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    centred = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / batch
    y = centred / tl.sqrt(var + eps) * tl.load(w_ptr + f) + tl.load(b_ptr + f)
    tl.store(out_ptr + rows * features + f, y, mask=mask)
    factor = 1.0 / tl.load(count_ptr).to(tl.float32)
    unbiased = var * batch / (batch - 1)
    tl.store(rm_ptr + f, tl.load(rm_ptr + f) + factor * (mean - tl.load(rm_ptr + f)))
    tl.store(rv_ptr + f, tl.load(rv_ptr + f) + factor * (unbiased - tl.load(rv_ptr + f)))


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.eps = 1e-5
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        assert x.is_contiguous()
        batch, features = x.shape
        step_counter_kernel[(1,)](self.num_batches_tracked)
        out = torch.empty_like(x)
        bn_cumulative_kernel[(features,)](
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            self.num_batches_tracked,
            out,
            batch,
            features,
            self.eps,
            BLOCK_B=triton.next_power_of_2(batch),
        )
        return out
