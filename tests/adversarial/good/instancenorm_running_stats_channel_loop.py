# good: InstanceNorm2d(affine=True, track_running_stats=True) in training mode, as KernelBench builds it:
# one program per channel walks the batch, normalising each (sample, channel) plane by its own mean and
# biased variance with the affine parameters, and moves the running mean and running variance by the
# momentum towards the batch average of the planes' means and unbiased variances, as F.instance_norm does
# spec: kb_instancenorm_running
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def instance_norm_train_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, channels, hw, eps, momentum, BLOCK: tl.constexpr
):
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < hw
    weight = tl.load(w_ptr + c)
    bias = tl.load(b_ptr + c)
    mean_sum = 0.0
    var_sum = 0.0
    for n in range(batch):
        base = (n * channels + c) * hw
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / hw
        diff = tl.where(mask, x - mean, 0.0)
        sq = tl.sum(diff * diff, axis=0)
        y = diff * tl.rsqrt(sq / hw + eps) * weight + bias
        tl.store(out_ptr + base + offs, y, mask=mask)
        mean_sum += mean
        var_sum += sq / (hw - 1)
    rm = tl.load(rm_ptr + c)
    rv = tl.load(rv_ptr + c)
    tl.store(rm_ptr + c, (1.0 - momentum) * rm + momentum * (mean_sum / batch))
    tl.store(rv_ptr + c, (1.0 - momentum) * rv + momentum * (var_sum / batch))


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, affine=True, track_running_stats=True)

    def forward(self, x):
        norm = self.norm
        x = x.contiguous()
        batch, channels, height, width = x.shape
        out = torch.empty_like(x)
        hw = height * width
        instance_norm_train_kernel[(channels,)](
            x,
            norm.weight,
            norm.bias,
            norm.running_mean,
            norm.running_var,
            out,
            batch,
            channels,
            hw,
            norm.eps,
            norm.momentum,
            BLOCK=triton.next_power_of_2(hw),
        )
        return out
