# good: Linear + Dropout(p=0) + GELU + logsumexp in training mode, all in one Triton program per row: the
# dropout's p read from the module (`self.dropout.p`), and since it is 0 the kernel leaves the values
# as they are (a p > 0 would need the generator's mask: asserted, not silently ignored); erf GELU, fp32
# logsumexp, a (batch, 1) output
# spec: kb_linear_dropout0_gelu_lse
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_gelu_lse(x_ptr, w_ptr, b_ptr, out_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    n = tl.arange(0, BLOCK_N)
    k = tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + row * K + k, mask=k < K, other=0.0)
    w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
    h = tl.sum(w * x[None, :], axis=1) + tl.load(b_ptr + n, mask=n < N, other=0.0)
    g = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    g = tl.where(n < N, g, -float("inf"))
    m = tl.max(g, axis=0)
    tl.store(out_ptr + row, m + tl.log(tl.sum(tl.exp(g - m), axis=0)))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p=0.0)

    def forward(self, x):
        assert self.dropout.p == 0.0 or not self.training, "this kernel fuses a dropout of p = 0 only"
        x = x.contiguous()
        batch, k = x.shape
        n = self.linear.out_features
        out = torch.empty((batch, 1), dtype=x.dtype, device=x.device)
        linear_gelu_lse[(batch,)](
            x,
            self.linear.weight,
            self.linear.bias,
            out,
            n,
            k,
            BLOCK_N=triton.next_power_of_2(n),
            BLOCK_K=triton.next_power_of_2(k),
        )
        return out
