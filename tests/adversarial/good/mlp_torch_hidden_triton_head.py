# good: KernelBench level-3 MLP: the hidden layers stay the module's PyTorch nn.Sequential (Linear + ReLU),
# the output layer in a Triton linear kernel on the last nn.Linear's parameters (permissive)
# spec: kb_mlp
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        x = tl.load(
            x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < K), other=0.0
        )
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        hidden = self.network[:-1](x).contiguous()
        head = self.network[-1]
        M, K = hidden.shape
        N = head.out_features
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        linear_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
            hidden, head.weight, head.bias, out, M, N, K, BM=16, BN=16, BK=16
        )
        return out
