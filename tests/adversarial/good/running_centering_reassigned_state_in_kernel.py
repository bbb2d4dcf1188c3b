# good: `running_centering_state_in_kernel` against a reference that replaces its buffer each call rather
# than updating it in place; the kernel moves its own buffer in place
# spec: running_centering_reassigned
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def centre_kernel(x_ptr, rm_ptr, out_ptr, batch, features, BLOCK_B: tl.constexpr):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    rm = tl.load(rm_ptr + f) * 0.9 + mean * 0.1
    tl.store(rm_ptr + f, rm)
    tl.store(out_ptr + rows * features + f, x - rm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(features))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        batch, features = x.shape
        centre_kernel[(features,)](
            x, self.running_mean, out, batch, features, BLOCK_B=triton.next_power_of_2(batch)
        )
        return out
