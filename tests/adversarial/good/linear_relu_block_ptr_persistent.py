# good: linear + relu as a persistent kernel: a fixed number of programs loops over the output tiles,
# each tile read through tl.make_block_ptr / tl.advance with boundary checks, the weight's transpose
# taken by its strides (no copy), bias and relu in the epilogue, stored through a block pointer
# spec: linear_relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def persistent_linear_relu(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    sxm,
    sxk,
    swk,
    swn,
    som,
    son,
    NUM_PROGS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    K_TILES: tl.constexpr,
):
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tl.cdiv(M, BLOCK_M) * tiles_n
    for tile in range(tl.program_id(0), tiles, NUM_PROGS):
        off_m = (tile // tiles_n) * BLOCK_M
        off_n = (tile % tiles_n) * BLOCK_N
        a_blk = tl.make_block_ptr(x_ptr, (M, K), (sxm, sxk), (off_m, 0), (BLOCK_M, BLOCK_K), (1, 0))
        b_blk = tl.make_block_ptr(w_ptr, (K, N), (swk, swn), (0, off_n), (BLOCK_K, BLOCK_N), (0, 1))
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for _ in range(K_TILES):
            a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
            b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
            acc += tl.dot(a, b, input_precision="ieee")
            a_blk = tl.advance(a_blk, (0, BLOCK_K))
            b_blk = tl.advance(b_blk, (BLOCK_K, 0))
        cols = off_n + tl.arange(0, BLOCK_N)
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0)[None, :]
        o_blk = tl.make_block_ptr(out_ptr, (M, N), (som, son), (off_m, off_n), (BLOCK_M, BLOCK_N), (1, 0))
        tl.store(o_blk, tl.maximum(acc, 0.0), boundary_check=(0, 1))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w_t = self.linear.weight.t()  # (K, N) view of the (N, K) weight
        M, K = x.shape
        N = w_t.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        bm, bn, bk = 16, 16, 16
        progs = 3
        persistent_linear_relu[(progs,)](
            x,
            w_t,
            self.linear.bias,
            out,
            M,
            N,
            K,
            x.stride(0),
            x.stride(1),
            w_t.stride(0),
            w_t.stride(1),
            out.stride(0),
            out.stride(1),
            NUM_PROGS=progs,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            K_TILES=triton.cdiv(K, bk),
        )
        return out
