# good: a reference that keeps its last two batch means in a plain list of tensors, replaced each call;
# one program per feature column computes the mean and the centred column, and the list is kept the same way
# spec: means_in_list
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def centre_kernel(x_ptr, p0_ptr, p1_ptr, mean_ptr, out_ptr, batch, features, BLOCK_B: tl.constexpr):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    centre = (tl.load(p0_ptr + f) + tl.load(p1_ptr + f) + mean) / 3.0
    tl.store(mean_ptr + f, mean)
    tl.store(out_ptr + rows * features + f, x - centre, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.last = [torch.zeros(features), torch.zeros(features)]

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        batch, features = x.shape
        mean = torch.empty(features, device=x.device, dtype=x.dtype)
        p0 = self.last[0].to(x.device)
        p1 = self.last[1].to(x.device)
        centre_kernel[(features,)](
            x, p0, p1, mean, out, batch, features, BLOCK_B=triton.next_power_of_2(batch)
        )
        self.last = [p1, mean]
        return out
