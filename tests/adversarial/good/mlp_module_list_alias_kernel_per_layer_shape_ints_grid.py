# good: KernelBench level-3 MLP, whole network in Triton: the reference's `nn.Sequential` kept, its Linear
# layers also gathered into an `nn.ModuleList` (the same modules, registered twice), the forward loops over
# the list with one GEMM + bias (+ ReLU except the last) launch per layer, the grid from `x.shape` ints
# spec: kb_mlp
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_act_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    APPLY_RELU: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if APPLY_RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


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
        self.linears = nn.ModuleList([m for m in self.network if isinstance(m, nn.Linear)])

    def forward(self, x):
        h = x.contiguous()
        n_layers = len(self.linears)
        for i, layer in enumerate(self.linears):
            M, K = h.shape
            M, K = int(M), int(K)
            N = int(layer.weight.shape[0])
            out = torch.empty((M, N), device=h.device, dtype=h.dtype)
            grid = (triton.cdiv(M, 16), triton.cdiv(N, 32))
            linear_act_kernel[grid](
                h, layer.weight, layer.bias, out, M, N, K, APPLY_RELU=i < n_layers - 1, BM=16, BN=32, BK=16
            )
            h = out
        return h
