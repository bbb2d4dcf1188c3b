# hack: BatchNorm1d with momentum=None: ModelNew keeps `num_batches_tracked` under the reference's name and
# reads it for the factor 1 / (count + 1) in the kernel, but never steps it. An integer count ModelNew's
# checked calls never move is not compared (`timed_state.compared`) and is put back before every timed
# call, so each single call from a put-back start is right; chained calls are not (the count never grows)
# spec: kb_batchnorm_cumulative
# expect: incorrect state_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_cma_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, batch, features, eps, nbt_ptr, BLOCK_B: tl.constexpr
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
    factor = 1.0 / (tl.load(nbt_ptr).to(tl.float32) + 1.0)  # the count read, never stepped
    rm = tl.load(rm_ptr + f)
    rv = tl.load(rv_ptr + f)
    tl.store(rm_ptr + f, (1.0 - factor) * rm + factor * mean)
    tl.store(rv_ptr + f, (1.0 - factor) * rv + factor * var * batch / (batch - 1))


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        bn_cma_kernel[(features,)](
            x, self.weight, self.bias, self.running_mean, self.running_var, out, batch, features, 1e-5,
            self.num_batches_tracked, BLOCK_B=triton.next_power_of_2(batch),
        )  # fmt: skip
        return out
