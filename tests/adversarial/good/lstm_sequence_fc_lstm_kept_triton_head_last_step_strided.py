# good: KernelBench level-3 LSTM + Linear head, LLM style: `nn.LSTM` kept and called (permissive; cudnn
# flags untouched), only the head in Triton: it reads out[:, -1, :] through the sequence output's strides
# (no slice copy) and fuses the Linear's bias; the last step index from `out.shape[1]` as a Python int
# spec: kb_lstm_sequence_fc
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def head_kernel(
    h_ptr, sb, t_off, w_ptr, b_ptr, out_ptr, B, N, K, BB: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rb = tl.arange(0, BB)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros((BB, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            h_ptr + t_off + rb[:, None] * sb + rk[None, :],
            mask=(rb[:, None] < B) & (rk[None, :] < K),
            other=0.0,
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rb[:, None] * N + rn[None, :], acc, mask=(rb[:, None] < B) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        out, _ = self.lstm(x)
        B, T, H = (int(s) for s in out.shape)
        N = self.fc.out_features
        y = torch.empty((B, N), device=x.device, dtype=x.dtype)
        sb, st, sh = out.stride()
        assert sh == 1
        head_kernel[(triton.cdiv(N, 16),)](
            out,
            sb,
            (T - 1) * st,
            self.fc.weight,
            self.fc.bias,
            y,
            B,
            N,
            H,
            BB=max(16, triton.next_power_of_2(B)),
            BN=16,
            BK=16,
        )
        return y
