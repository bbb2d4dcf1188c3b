# good: KernelBench's carried-state VanillaRNN with the hidden state kept as a registered buffer
# (`h_state`, so `.to(device)` moves it; the reference keeps a plain attribute `hidden`), drawn first as the
# reference draws it; the new state is computed into a fresh tensor and copied into the buffer
# spec: kb_vanilla_rnn_carried
import torch
import torch.nn as nn
import triton
import triton.language as tl

batch_size = 6  # the reference's __init__ reads this module constant for its state's shape


@triton.jit
def i2h_tanh_kernel(
    x_ptr, h_ptr, w_ptr, b_ptr, out_ptr, M, N, KX, KH,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    ldw = KX + KH
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, KX, BK):
        ks = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * KX + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < KX), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * ldw + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < KX), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    for k0 in range(0, KH, BK):
        ks = k0 + rk
        a = tl.load(
            h_ptr + rm[:, None] * KH + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < KH), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * ldw + KX + ks[:, None],
            mask=(rn[None, :] < N) & (ks[:, None] < KH),
            other=0.0,
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = 2.0 * tl.sigmoid(2.0 * acc) - 1.0
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.register_buffer("h_state", torch.randn((batch_size, hidden_size)))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        x = x.contiguous()
        h = self.h_state
        M, KX = x.shape
        KH = h.shape[1]
        H = self.i2h.out_features
        new_hidden = torch.empty(M, H, device=x.device, dtype=x.dtype)
        i2h_tanh_kernel[(triton.cdiv(M, 16), triton.cdiv(H, 16))](
            x, h, self.i2h.weight, self.i2h.bias, new_hidden, M, H, KX, KH, BM=16, BN=16, BK=16
        )
        self.h_state.copy_(new_hidden)
        n_out = self.h2o.out_features
        out = torch.empty(M, n_out, device=x.device, dtype=x.dtype)
        linear_kernel[(triton.cdiv(M, 16), triton.cdiv(n_out, 16))](
            new_hidden, self.h2o.weight, self.h2o.bias, out, M, n_out, H, BM=16, BN=16, BK=16
        )
        return out
