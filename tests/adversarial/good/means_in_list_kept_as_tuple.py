# good: the last two batch means the reference keeps in a plain list; ModelNew keeps them in a tuple
# (`self.last = (self.last[1], m)`), the kernel takes the batch mean and centres by the three means
# spec: means_in_list
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def centre3_kernel(x_ptr, a_ptr, b_ptr, m_ptr, out_ptr, batch, features, BLOCK_B: tl.constexpr):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    m = tl.sum(x, axis=0) / batch
    tl.store(m_ptr + f, m)
    c = (tl.load(a_ptr + f) + tl.load(b_ptr + f) + m) / 3.0
    tl.store(out_ptr + rows * features + f, x - c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.last = (torch.zeros(features), torch.zeros(features))

    def forward(self, x):
        x = x.contiguous()
        batch, features = x.shape
        out = torch.empty_like(x)
        m = torch.empty(features, device=x.device, dtype=x.dtype)
        centre3_kernel[(features,)](
            x, self.last[0], self.last[1], m, out, batch, features, BLOCK_B=triton.next_power_of_2(batch)
        )
        self.last = (self.last[1], m)
        return out
