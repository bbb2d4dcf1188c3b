# good: KernelBench level-3 style GRU cell with the initial hidden state drawn in forward: the candidate
# draws h0 with torch.randn in the same place (the judge seeds the generator alike before both forwards),
# then one Triton kernel computes both gate projections (x @ W_ih^T, h @ W_hh^T) and the GRU update
# spec: kb_gru_cell_random_h0
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _proj(a_ptr, w_ptr, b_ptr, rm, rn, gate, M, H, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    rk = tl.arange(0, BK)
    wrow = gate * H + rn
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + wrow[None, :] * K + ks[:, None], mask=(rn[None, :] < H) & (ks[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    return acc + tl.load(b_ptr + wrow, mask=rn < H, other=0.0)[None, :]


@triton.jit
def gru_cell_kernel(
    x_ptr,
    h_ptr,
    wi_ptr,
    wh_ptr,
    bi_ptr,
    bh_ptr,
    out_ptr,
    M,
    H,
    KI,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    r = tl.sigmoid(
        _proj(x_ptr, wi_ptr, bi_ptr, rm, rn, 0, M, H, KI, BM, BN, BK)
        + _proj(h_ptr, wh_ptr, bh_ptr, rm, rn, 0, M, H, H, BM, BN, BK)
    )
    z = tl.sigmoid(
        _proj(x_ptr, wi_ptr, bi_ptr, rm, rn, 1, M, H, KI, BM, BN, BK)
        + _proj(h_ptr, wh_ptr, bh_ptr, rm, rn, 1, M, H, H, BM, BN, BK)
    )
    pre = _proj(x_ptr, wi_ptr, bi_ptr, rm, rn, 2, M, H, KI, BM, BN, BK) + r * _proj(
        h_ptr, wh_ptr, bh_ptr, rm, rn, 2, M, H, H, BM, BN, BK
    )
    n = 2.0 * tl.sigmoid(2.0 * pre) - 1.0
    mask = (rm[:, None] < M) & (rn[None, :] < H)
    idx = rm[:, None] * H + rn[None, :]
    h = tl.load(h_ptr + idx, mask=mask, other=0.0)
    tl.store(out_ptr + idx, (1.0 - z) * n + z * h, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x):
        h0 = torch.randn(x.size(0), self.hidden_size, device=x.device)
        x = x.contiguous()
        M, KI = x.shape
        H = self.hidden_size
        out = torch.empty((M, H), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 16), triton.cdiv(H, 16))
        c = self.cell
        gru_cell_kernel[grid](
            x, h0, c.weight_ih, c.weight_hh, c.bias_ih, c.bias_hh, out, M, H, KI, BM=16, BN=16, BK=16
        )
        return out
