"""Our Triton GEMM (`_matmul`), pasted into the seeds that replace library matmuls (own_gemm.py).

A grouped-tile kernel with the bias/alpha/beta epilogue fused. An operand stored transposed (A contiguous
along M, B along K: Inductor's view of nn.Linear's weight) is loaded in its memory order and transposed in
registers, so its loads stay coalesced. fp32 dot products are IEEE fp32 by default (no TF32, so
KernelBench's fp32 tolerance holds) or 3xTF32/3xBF16 (MM_FP32_PRECISION). Tile sizes, warps, stages and
the fp32 precision are tunables.

Split-K: an output of few tiles over a long K (KernelBench L1/6: 256x256 over K=524288, 16 tiles for 132
SMs) splits K across programs, each writing an fp32 partial to a workspace that a second kernel sums in a
fixed order (deterministic) before the epilogue. Shorter accumulation chains are also more accurate (L1/4,
a matrix-vector product over K=1M, missed 1e-4 in one chain). MM_SPLIT_K = 0 picks the split from the
shape; a positive value forces it.

`_ke_epilogue` is the placeholder that gemm_epilogue.py's copies of `_ke_matmul_kernel` call their own
epilogue in place of. `# fmt: off` keeps the layout candidates have; the plan cache is an untyped dict.
"""
# fmt: off
# mypy: disable-error-code="var-annotated"

import torch
import triton
import triton.language as tl

# ke:stand-in begin
MM_EPILOGUE = "fused"  # per candidate: gemm_epilogue.EPILOGUE_TUNABLES, where an epilogue is fused
# ke:stand-in end

# ke:tunables begin
MM_BLOCK_M = 64  # tune: 32, 64, 128
MM_BLOCK_N = 64  # tune: 32, 64, 128, 256
MM_BLOCK_K = 32  # tune: 16, 32, 64
MM_GROUP_M = 8  # tune: 1, 4, 8
MM_WARPS = 4  # tune: 2, 4, 8
MM_STAGES = 3  # tune: 2, 3, 4, 5
# fp32 dot precision: "ieee" is exact fp32 FMA; "tf32x3" and "bf16x3" use tensor cores at near-fp32
# accuracy (about 22 and 16 bits of mantissa; bf16x3 at twice the rate).
MM_FP32_PRECISION = "ieee"  # tune: "ieee", "tf32x3", "bf16x3"
# K split across programs: 0 picks it from the shape (few output tiles, long K), 1 never splits.
MM_SPLIT_K = 0  # tune: 0, 1, 4, 16
# ke:tunables end


@triton.jit
def _ke_operand_ptrs(base, offs_rows, offs_cols, stride_rows, stride_cols, TRANSPOSED: tl.constexpr):
    """Pointers to a [rows, cols] operand tile; laid out [cols, rows] when TRANSPOSED, so the tile's
    last axis is the contiguous one in memory either way (coalesced loads)."""
    # if/else, not an early return: Triton type-checks the dead return too, and the shapes differ
    if TRANSPOSED:
        ptrs = base + offs_cols[:, None] * stride_cols + offs_rows[None, :] * stride_rows
    else:
        ptrs = base + offs_rows[:, None] * stride_rows + offs_cols[None, :] * stride_cols
    return ptrs


@triton.jit
def _ke_load_operand(ptrs, rows_ok, cols_ok, TRANSPOSED: tl.constexpr):
    """The [rows, cols] tile at `ptrs` (from _ke_operand_ptrs), zero outside the row and column masks."""
    if TRANSPOSED:
        tile = tl.trans(tl.load(ptrs, mask=cols_ok[:, None] & rows_ok[None, :], other=0.0))
    else:
        tile = tl.load(ptrs, mask=rows_ok[:, None] & cols_ok[None, :], other=0.0)
    return tile


@triton.jit
def _ke_matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, partial_ptr, M, N, K, batches,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn, stride_xb, stride_xm, stride_xn, alpha, beta,
    e0, e1, e2, e3, e4, e5,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr, A_M_CONTIGUOUS: tl.constexpr,
    B_K_CONTIGUOUS: tl.constexpr, SPLIT_K: tl.constexpr, HAS_EPILOGUE: tl.constexpr, STORE_C: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    split = tl.program_id(2)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * tiles_n)
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % rows_in_group)
    pid_n = (pid % (GROUP_M * tiles_n)) // rows_in_group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_blocks = tl.cdiv(K, BLOCK_K)
    blocks_per_split = tl.cdiv(k_blocks, SPLIT_K)
    first_block = split * blocks_per_split
    offs_k = first_block * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = _ke_operand_ptrs(a_ptr + batch * stride_ab, offs_m, offs_k, stride_am, stride_ak, A_M_CONTIGUOUS)
    b_ptrs = _ke_operand_ptrs(b_ptr + batch * stride_bb, offs_k, offs_n, stride_bk, stride_bn, B_K_CONTIGUOUS)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(first_block, tl.minimum(first_block + blocks_per_split, k_blocks)):
        k_ok = offs_k < K - k * BLOCK_K
        a = _ke_load_operand(a_ptrs, offs_m < M, k_ok, A_M_CONTIGUOUS)
        b = _ke_load_operand(b_ptrs, k_ok, offs_n < N, B_K_CONTIGUOUS)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    inside = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if SPLIT_K > 1:  # an fp32 partial; _ke_split_k_sum adds the splits and applies the epilogue
        plane = (split * batches + batch).to(tl.int64) * M * N
        tl.store(partial_ptr + plane + offs_m[:, None] * N + offs_n[None, :], acc, mask=inside)
    else:
        acc = acc * alpha
        if HAS_BIAS:
            bias = tl.load(
                bias_ptr + batch * stride_xb + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn,
                mask=inside,
                other=0.0,
            )
            acc += beta * bias.to(tl.float32)
        c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        if HAS_EPILOGUE:  # the pointwise kernel that followed, on this tile of a contiguous output
            xindex = batch * M * N + offs_m[:, None] * N + offs_n[None, :]
            _ke_epilogue(acc.to(c_ptr.dtype.element_ty), xindex, inside, e0, e1, e2, e3, e4, e5)
        if STORE_C:
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=inside)


@triton.jit
def _ke_epilogue(value, xindex, xmask, e0, e1, e2, e3, e4, e5):
    """None: copies of _ke_matmul_kernel with an epilogue call their own (gemm_epilogue.py)."""
    pass


@triton.jit
def _ke_split_k_sum(
    partial_ptr, c_ptr, bias_ptr, M, N, batches,
    stride_cb, stride_cm, stride_cn, stride_xb, stride_xm, stride_xn, alpha, beta,
    HAS_BIAS: tl.constexpr, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
):
    """c = alpha * (sum of the SPLIT_K partials, in split order) (+ beta * bias), one batch per axis 1."""
    batch = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < M * N
    rows = offs // N
    cols = offs % N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for split in range(SPLIT_K):
        plane = (split * batches + batch).to(tl.int64) * M * N
        acc += tl.load(partial_ptr + plane + offs, mask=inside, other=0.0)
    acc = acc * alpha
    if HAS_BIAS:
        bias_ptrs = bias_ptr + batch * stride_xb + rows * stride_xm + cols * stride_xn
        acc += beta * tl.load(bias_ptrs, mask=inside, other=0.0).to(tl.float32)
    c_ptrs = c_ptr + batch * stride_cb + rows * stride_cm + cols * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=inside)


def _split_k(tiles, k):
    """K-splits for a launch of `tiles` output tiles: MM_SPLIT_K when set, else enough for about two
    waves on a 132-SM GPU (H100/H200) when the tiles alone are fewer, at least 8 K-blocks a split."""
    k_blocks = triton.cdiv(k, MM_BLOCK_K)
    if MM_SPLIT_K > 0:
        return max(1, min(MM_SPLIT_K, k_blocks))
    return max(1, min(64, 264 // max(tiles, 1), k_blocks // 8))


def _rows_contiguous(stride_rows, stride_cols):
    """Whether an operand is a transposed view (contiguous down its rows: nn.Linear's weight as Inductor
    passes it), to be loaded transposed; a constexpr, so each layout compiles its own kernel."""
    return stride_rows == 1 and stride_cols != 1


def _ke_mm_plan(a_layout, b_layout, out_layout, bias_layout, epilogue_kernel, epilogue_writes, epilogue_numel):
    """What `_matmul` launches for operands of these layouts ((shape, stride, dtype); None: no output given,
    or no bias): the kernel, its grid, integer arguments and constexprs, the output's shape where none is
    given, the split-K workspace's shape (None: no split), the split sum's grid and integer arguments, and
    whether the epilogue is fused. Worked out on meta tensors of those layouts: never the data."""

    def meta(layout):
        return None if layout is None else torch.empty_strided(*layout[:2], dtype=layout[2], device="meta")

    a, b, out, bias = meta(a_layout), meta(b_layout), meta(out_layout), meta(bias_layout)
    batched = a.dim() == 3
    a3 = a if batched else a.unsqueeze(0)
    b3 = b if batched else b.unsqueeze(0)
    batches, m, k = a3.shape
    n = b3.shape[2]
    out_shape = (batches, m, n) if batched else (m, n)
    if out is None:
        out = torch.empty(out_shape, device="meta", dtype=a.dtype)
    c3 = out if batched else out.unsqueeze(0)
    x3 = c3
    if bias is not None:
        x3 = bias.expand(c3.shape) if batched else bias.expand(m, n).unsqueeze(0)
    tiles = triton.cdiv(m, MM_BLOCK_M) * triton.cdiv(n, MM_BLOCK_N)
    split = _split_k(tiles * batches, k)
    fused = (
        epilogue_kernel is not None and MM_EPILOGUE == "fused" and split == 1 and c3.is_contiguous()
        and epilogue_numel == c3.numel() < 2**31
    )
    kernel, writes = (epilogue_kernel, epilogue_writes) if fused else (_ke_matmul_kernel, False)
    c_and_x_strides = (c3.stride(0), c3.stride(1), c3.stride(2), x3.stride(0), x3.stride(1), x3.stride(2))
    ints = (
        m, n, k, batches, a3.stride(0), a3.stride(1), a3.stride(2), b3.stride(0), b3.stride(1), b3.stride(2),
        *c_and_x_strides,
    )
    constexprs = dict(
        HAS_EPILOGUE=fused, STORE_C=not writes, HAS_BIAS=bias is not None,
        # input_precision only applies to fp32; other dtypes keep Triton's default (None)
        PRECISION=MM_FP32_PRECISION if a.dtype == torch.float32 else None,
        A_M_CONTIGUOUS=_rows_contiguous(a3.stride(1), a3.stride(2)),
        B_K_CONTIGUOUS=_rows_contiguous(b3.stride(1), b3.stride(2)),
        SPLIT_K=split, BLOCK_M=MM_BLOCK_M, BLOCK_N=MM_BLOCK_N, BLOCK_K=MM_BLOCK_K, GROUP_M=MM_GROUP_M,
        num_warps=MM_WARPS, num_stages=MM_STAGES,
    )
    partial_shape = (split, batches, m, n) if split > 1 else None
    sum_grid = (triton.cdiv(m * n, 1024), batches)
    sum_ints = (m, n, batches, *c_and_x_strides)
    return kernel, (tiles, batches, split), ints, constexprs, out_shape, partial_shape, sum_grid, sum_ints, fused


# Launch plans by operand layouts and scalars (what a plan is worked out from): on a hit `_matmul` skips the
# views, strides and split choice, about as much host time as the launch itself (experiments/launch_overhead:
# 52-86 us a call against 20 for a bare launch of as many arguments), which strict level-3 results wait on.
_ke_mm_plans = {}


def _matmul(a, b, out=None, bias=None, alpha=1, beta=1, epilogue=None, epilogue_numel=0):
    """(bias * beta +) alpha * a @ b for 2-D or batched 3-D operands, into `out` when given.

    `epilogue`: (copy of _ke_matmul_kernel calling the next pointwise kernel's body on each tile, that
    kernel's launcher, its launch arguments, the epilogue's arguments, whether the epilogue writes `out`
    itself); `epilogue_numel` its xnumel. Fused when the output is one contiguous block of that many
    elements and K is not split; else the pointwise kernel is launched after the GEMM, as Inductor did.
    """
    a_layout, b_layout = (a.shape, a.stride(), a.dtype), (b.shape, b.stride(), b.dtype)
    out_layout = None if out is None else (out.shape, out.stride(), out.dtype)
    bias_layout = None if bias is None else (bias.shape, bias.stride(), bias.dtype)
    epilogue_kernel, epilogue_writes = (None, False) if epilogue is None else (epilogue[0], epilogue[4])
    plan_key = (a_layout, b_layout, out_layout, bias_layout, epilogue_kernel, epilogue_writes, epilogue_numel)
    plan = _ke_mm_plans.get(plan_key)
    if plan is None:
        plan = _ke_mm_plans[plan_key] = _ke_mm_plan(*plan_key)
    kernel, grid, ints, constexprs, out_shape, partial_shape, sum_grid, sum_ints, fused = plan
    if out is None:
        out = torch.empty(out_shape, device=a.device, dtype=a.dtype)
    # the kernel takes pointers and the plan's strides: a view unsqueezed or expanded keeps its pointer
    x = out if bias is None else bias
    partial = out if partial_shape is None else torch.empty(partial_shape, device=a.device, dtype=torch.float32)
    extra = epilogue[3] if fused else ()
    kernel[grid](a, b, out, x, partial, *ints, alpha, beta, *[*extra, out, out, out, out, out, out][:6], **constexprs)
    if partial_shape is not None:
        _ke_split_k_sum[sum_grid](
            partial, out, x, *sum_ints, alpha, beta, HAS_BIAS=bias is not None, SPLIT_K=grid[2], BLOCK=1024,
        )
    if epilogue is not None and not fused:
        epilogue[1](*epilogue[2])
    return out
