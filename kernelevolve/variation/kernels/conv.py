"""Our Triton convolutions (`_conv`), pasted into the seeds that replace library convolutions (own_conv.py).

1-, 2- or 3-D, plain or transposed, any stride, padding, dilation, output padding and groups: output
pixels x output channels as an implicit GEMM over input channels x kernel taps (a transposed convolution
gathers the input positions that map onto each output), with the bias fused, written in the layout the
caller asks for. fp32 dot products are IEEE fp32 by default, or 3xTF32/3xBF16/TF32 (CONV_FP32_PRECISION).
Two K loops (CONV_LOOP, "fused" and "taps": own_conv.py says when each wins), and a direct kernel for
depthwise convolutions (one input channel per group), which would use one column of a GEMM tile.

`_ke_conv_epilogue` is the placeholder that gemm_epilogue.py's copies of the two implicit-GEMM kernels call
their own epilogue in place of. `# fmt: off` keeps the layout candidates have; the host code's `zip`s are
over lists of one length (B905 would have them say so).
"""
# fmt: off
# ruff: noqa: B905

import torch
import triton
import triton.language as tl

# ke:stand-in begin
CONV_EPILOGUE = "fused"  # per candidate: gemm_epilogue.CONV_EPILOGUE_TUNABLES, where an epilogue is fused
# ke:stand-in end

# ke:tunables begin
CONV_BLOCK_M = 64  # tune: 32, 64, 128
CONV_BLOCK_N = 32  # tune: 16, 32, 64, 128
CONV_BLOCK_K = 32  # tune: 16, 32, 64
CONV_WARPS = 4  # tune: 2, 4, 8
CONV_STAGES = 2  # tune: 1, 2, 3, 4
# fp32 dot precision: "ieee" is exact fp32 FMA; "tf32x3" and "bf16x3" use tensor cores at near-fp32
# accuracy (about 22 and 16 bits of mantissa; bf16x3 at twice the rate).
# "tf32" is one TF32 pass, PyTorch's default for convolutions (eager's precision).
CONV_FP32_PRECISION = "ieee"  # tune: "ieee", "tf32x3", "bf16x3", "tf32"
# K loop: "taps" steps through taps, then channels, and each program of a transposed convolution
# takes one stride phase, visiting only its valid taps; "fused" through (input channel x tap) flattened.
# "auto": "fused" for a plain convolution of fewer than 16 input channels per group, "taps" otherwise.
CONV_LOOP = "auto"  # tune: "auto", "taps", "fused"
DW_BLOCK = 256  # tune: 128, 256, 512, 1024
DW_WARPS = 4  # tune: 1, 2, 4, 8
# ke:tunables end


@triton.jit
def _ke_output_position(offs, OD, OH, OW):
    """(batch, depth, row, column) of flat output-pixel indices, the column fastest."""
    n = (offs // (OD * OH * OW)).to(tl.int64)
    rest = offs % (OD * OH * OW)
    od = rest // (OH * OW)
    rest = rest % (OH * OW)
    return n, od, rest // OW, rest % OW


@triton.jit
def _ke_conv_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, N, D, H, W, OD, OH, OW, KD, KH, KW, CG, COG,
    sxn, sxc, sxd, sxh, sxw, swa, swb, swd, swh, sww, syn, syc, syd, syh, syw,
    step_d, step_h, step_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, e0, e1, e2, e3, e4, e5,
    TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    HAS_EPILOGUE: tl.constexpr, STORE_Y: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    group = tl.program_id(1)
    tiles_n = tl.cdiv(COG, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    pixels = N * OD * OH * OW
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n, od, oh, ow = _ke_output_position(offs_m, OD, OH, OW)
    offs_co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    co = (group * COG + offs_co).to(tl.int64)
    taps = KD * KH * KW
    depth = CG * taps
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, depth, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        c = offs_k // taps
        tap = offs_k % taps
        kd = tap // (KH * KW)
        tap = tap % (KH * KW)
        kh = tap // KW
        kw = tap % KW
        if TRANSPOSED:  # output o gathers input i where o = i * step - pad + k * dil
            td = od[:, None] + pad_d - kd[None, :] * dil_d
            th = oh[:, None] + pad_h - kh[None, :] * dil_h
            tw = ow[:, None] + pad_w - kw[None, :] * dil_w
            ok = (td >= 0) & (th >= 0) & (tw >= 0)
            ok = ok & (td % step_d == 0) & (th % step_h == 0) & (tw % step_w == 0)
            idd = td // step_d
            ih = th // step_h
            iw = tw // step_w
        else:
            idd = od[:, None] * step_d - pad_d + kd[None, :] * dil_d
            ih = oh[:, None] * step_h - pad_h + kh[None, :] * dil_h
            iw = ow[:, None] * step_w - pad_w + kw[None, :] * dil_w
            ok = (idd >= 0) & (ih >= 0) & (iw >= 0)
        ok = ok & (idd < D) & (ih < H) & (iw < W)
        ok = ok & (offs_m[:, None] < pixels) & (offs_k[None, :] < depth)
        cin = (group * CG + c).to(tl.int64)
        a = tl.load(
            x_ptr + n[:, None] * sxn + cin[None, :] * sxc + idd * sxd + ih * sxh + iw * sxw, mask=ok, other=0.0
        )
        if TRANSPOSED:  # weight (in channels, out channels per group, taps)
            w_rows = cin[:, None] * swa + offs_co[None, :] * swb
        else:  # weight (out channels, in channels per group, taps)
            w_rows = co[None, :] * swa + c[:, None] * swb
        w_mask = (offs_k[:, None] < depth) & (offs_co[None, :] < COG)
        b = tl.load(
            w_ptr + w_rows + kd[:, None] * swd + kh[:, None] * swh + kw[:, None] * sww, mask=w_mask, other=0.0
        )
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    inside = (offs_m[:, None] < pixels) & (offs_co[None, :] < COG)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=offs_co < COG, other=0.0).to(tl.float32)[None, :]
    y_offs = n[:, None] * syn + co[None, :] * syc + od[:, None] * syd + oh[:, None] * syh + ow[:, None] * syw
    if HAS_EPILOGUE:  # the pointwise kernel that followed, on this tile of a dense output
        _ke_conv_epilogue(acc.to(y_ptr.dtype.element_ty), y_offs, inside, e0, e1, e2, e3, e4, e5)
    if STORE_Y:
        tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty), mask=inside)


@triton.jit
def _ke_conv_epilogue(value, xindex, xmask, e0, e1, e2, e3, e4, e5):
    """None: copies of the convolution kernels with an epilogue call their own (gemm_epilogue.py)."""
    pass


@triton.jit
def _ke_phase_taps(r, pad, dil, step, kstep, inv, K):
    """The taps of a transposed convolution's stride phase r (outputs o = q * step + r): o gathers
    input (o + pad - k * dil) / step where that divides, for k = k0, k0 + kstep, ... below K (kstep =
    step / g, g = gcd(step, dil); inv = (dil / g)^-1 mod kstep). Returns k0, how many, the input index
    at q = 0 and its change from one tap to the next."""
    c = (r + pad) % step
    g = step // kstep
    k0 = tl.where(c % g == 0, (c // g) * inv % kstep, K)  # K: no tap reaches this phase
    count = (K - k0 + kstep - 1) // kstep  # k0 < kstep or k0 == K: the numerator is never negative
    return k0, count, (r + pad - k0 * dil) // step, -((kstep * dil) // step)


@triton.jit
def _ke_conv_taps_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, N, D, H, W, OD, OH, OW, KD, KH, KW, CG, COG,
    sxn, sxc, sxd, sxh, sxw, swa, swb, swd, swh, sww, syn, syc, syd, syh, syw,
    step_d, step_h, step_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    e0, e1, e2, e3, e4, e5, kstep_d, kstep_h, kstep_w, inv_d, inv_h, inv_w,
    TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    HAS_EPILOGUE: tl.constexpr, STORE_Y: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # K steps: taps, then input channels BLOCK_K at a time; a row's spatial index and validity take
    # a vector of BLOCK_M per step, and the A tile's address is row + channel * sxc
    pid = tl.program_id(0)
    group = tl.program_id(1)
    tiles_n = tl.cdiv(COG, BLOCK_N)
    if TRANSPOSED:  # one stride phase per program: its pixels o = q * step + r share r, hence their taps
        QD = tl.cdiv(OD, step_d)
        QH = tl.cdiv(OH, step_h)
        QW = tl.cdiv(OW, step_w)
        phases = step_d * step_h * step_w
    else:
        QD = OD
        QH = OH
        QW = OW
        phases = 1
    pixels = N * QD * QH * QW
    # the phases of one block of q next to each other: they read the same input rows and write
    # neighbouring outputs, close together in time (L2)
    pid_n = pid % tiles_n
    phase = pid // tiles_n % phases
    pid_m = pid // (tiles_n * phases)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n, qd, qh, qw = _ke_output_position(offs_m, QD, QH, QW)
    if TRANSPOSED:
        rd = phase // (step_h * step_w)
        rh = phase // step_w % step_h
        rw = phase % step_w
        od = qd * step_d + rd
        oh = qh * step_h + rh
        ow = qw * step_w + rw
        inside = (offs_m < pixels) & (od < OD) & (oh < OH) & (ow < OW)  # the last q of a phase may be past
        kd0, nkd, base_d, inc_d = _ke_phase_taps(rd, pad_d, dil_d, step_d, kstep_d, inv_d, KD)
        kh0, nkh, base_h, inc_h = _ke_phase_taps(rh, pad_h, dil_h, step_h, kstep_h, inv_h, KH)
        kw0, nkw, base_w, inc_w = _ke_phase_taps(rw, pad_w, dil_w, step_w, kstep_w, inv_w, KW)
        idd0 = qd + base_d
        ih0 = qh + base_h
        iw0 = qw + base_w
    else:
        od = qd
        oh = qh
        ow = qw
        inside = offs_m < pixels
        kd0, nkd, inc_d, idd0 = 0, KD, dil_d, od * step_d - pad_d
        kh0, nkh, inc_h, ih0 = 0, KH, dil_h, oh * step_h - pad_h
        kw0, nkw, inc_w, iw0 = 0, KW, dil_w, ow * step_w - pad_w
    x_rows = n * sxn + idd0.to(tl.int64) * sxd + ih0.to(tl.int64) * sxh + iw0.to(tl.int64) * sxw
    x_group = x_ptr + (group * CG).to(tl.int64) * sxc
    offs_co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    co = (group * COG + offs_co).to(tl.int64)
    co_ok = offs_co < COG
    chunks = tl.cdiv(CG, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, nkd * nkh * nkw * chunks):  # one loop, not two: the pipeliner sees every step
        tap = k // chunks
        c = (k % chunks) * BLOCK_K + tl.arange(0, BLOCK_K)
        jd = tap // (nkh * nkw)
        jh = tap // nkw % nkh
        jw = tap % nkw
        dd = jd * inc_d
        dh = jh * inc_h
        dw = jw * inc_w
        idd = idd0 + dd
        ih = ih0 + dh
        iw = iw0 + dw
        ok = inside & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        shift = dd.to(tl.int64) * sxd + dh.to(tl.int64) * sxh + dw.to(tl.int64) * sxw
        c_ok = c < CG
        a = tl.load(
            x_group + (x_rows + shift)[:, None] + c.to(tl.int64)[None, :] * sxc,
            mask=ok[:, None] & c_ok[None, :],
            other=0.0,
        )
        w_tap = (kd0 + jd * kstep_d) * swd + (kh0 + jh * kstep_h) * swh + (kw0 + jw * kstep_w) * sww
        if TRANSPOSED:  # weight (in channels, out channels per group, taps)
            w_rows = (group * CG + c).to(tl.int64)[:, None] * swa + offs_co[None, :] * swb
        else:  # weight (out channels, in channels per group, taps)
            w_rows = co[None, :] * swa + c[:, None] * swb
        b = tl.load(w_ptr + w_tap + w_rows, mask=c_ok[:, None] & co_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=co_ok, other=0.0).to(tl.float32)[None, :]
    y_rows = n * syn + od.to(tl.int64) * syd + oh.to(tl.int64) * syh + ow.to(tl.int64) * syw
    y_offs = y_rows[:, None] + co[None, :] * syc
    y_mask = inside[:, None] & co_ok[None, :]
    if HAS_EPILOGUE:  # the pointwise kernel that followed, on this tile of a dense output
        _ke_conv_epilogue(acc.to(y_ptr.dtype.element_ty), y_offs, y_mask, e0, e1, e2, e3, e4, e5)
    if STORE_Y:
        tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty), mask=y_mask)


@triton.jit
def _ke_depthwise_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, N, D, H, W, OD, OH, OW, KD, KH, KW, COG,
    sxn, sxc, sxd, sxh, sxw, swa, swd, swh, sww, syn, syc, syd, syh, syw,
    step_d, step_h, step_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr,
):
    co = tl.program_id(1).to(tl.int64)
    cin = co // COG  # one input channel per group: output channel co reads channel co // COG
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < N * OD * OH * OW
    n, od, oh, ow = _ke_output_position(offs, OD, OH, OW)
    x_base = x_ptr + n * sxn + cin * sxc
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for kd in range(0, KD):
        idd = od * step_d - pad_d + kd * dil_d
        for kh in range(0, KH):
            ih = oh * step_h - pad_h + kh * dil_h
            for kw in range(0, KW):
                iw = ow * step_w - pad_w + kw * dil_w
                ok = inside & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                xv = tl.load(x_base + idd * sxd + ih * sxh + iw * sxw, mask=ok, other=0.0)
                wv = tl.load(w_ptr + co * swa + kd * swd + kh * swh + kw * sww)
                acc += xv.to(tl.float32) * wv.to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co).to(tl.float32)
    y_ptrs = y_ptr + n * syn + co * syc + od * syd + oh * syh + ow * syw
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=inside)


def _spatial(value, dims, fill):
    values = list(value) if isinstance(value, (tuple, list)) else [value] * dims
    return [fill] * (3 - dims) + values


def _as_3d(tensor, dims):
    for _ in range(3 - dims):
        tensor = tensor.unsqueeze(2)
    return tensor


def _conv(
    x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, transposed=False, output_padding=0,
    out_size=None, out_stride=None, epilogue=None, epilogue_numel=0,
):
    # 1-, 2- or 3-D convolution or transposed convolution (aten semantics) by our implicit GEMM.
    # `epilogue`: (copies of _ke_conv_kernel and _ke_conv_taps_kernel calling the next pointwise kernel's
    # body on each tile, that kernel's launcher, its launch arguments, the epilogue's arguments, whether
    # the epilogue writes the output itself); fused where the output is dense (its offsets are the
    # pointwise kernel's xindex) with epilogue_numel elements, else launched after the convolution.
    if CONV_LOOP not in ("auto", "taps", "fused"):
        raise ValueError(f"CONV_LOOP is {CONV_LOOP!r}: one of 'auto', 'taps', 'fused'")
    dims = x.dim() - 2
    step, pad = _spatial(stride, dims, 1), _spatial(padding, dims, 0)
    dil, extra = _spatial(dilation, dims, 1), _spatial(output_padding, dims, 0)
    x5, w5 = _as_3d(x, dims), _as_3d(weight, dims)
    batch, channels = x5.shape[0], x5.shape[1]
    spatial_in = list(x5.shape[2:])
    kernel = list(w5.shape[2:])
    out_channels = w5.shape[1] * groups if transposed else w5.shape[0]
    spatial = []
    for i, s, p, d, k, e in zip(spatial_in, step, pad, dil, kernel, extra):
        if transposed:
            spatial.append((i - 1) * s - 2 * p + d * (k - 1) + e + 1)
        else:
            spatial.append((i + 2 * p - d * (k - 1) - 1) // s + 1)
    size = (batch, out_channels, *spatial[3 - dims:])
    if out_stride is not None:
        y = torch.empty_strided(size, out_stride, dtype=x.dtype, device=x.device)
    else:
        y = torch.empty(size, dtype=x.dtype, device=x.device)
    y5 = _as_3d(y, dims)
    per_group = out_channels // groups
    # the epilogue's arguments name the output (made here) None
    if epilogue is not None:
        epilogue = (
            *epilogue[:3], *([y if a is None else a for a in epilogue[i]] for i in (3, 4)), epilogue[5]
        )
    if not transposed and channels // groups == 1:  # depthwise: the direct kernel
        pixels = batch * spatial[0] * spatial[1] * spatial[2]
        _ke_depthwise_kernel[(triton.cdiv(pixels, DW_BLOCK), out_channels)](
            x5, w5, bias if bias is not None else y5, y5, batch, spatial_in[0], spatial_in[1], spatial_in[2],
            spatial[0], spatial[1], spatial[2], kernel[0], kernel[1], kernel[2], per_group,
            x5.stride(0), x5.stride(1), x5.stride(2), x5.stride(3), x5.stride(4),
            w5.stride(0), w5.stride(2), w5.stride(3), w5.stride(4),
            y5.stride(0), y5.stride(1), y5.stride(2), y5.stride(3), y5.stride(4),
            step[0], step[1], step[2], pad[0], pad[1], pad[2], dil[0], dil[1], dil[2],
            HAS_BIAS=bias is not None, BLOCK=DW_BLOCK, num_warps=DW_WARPS,
        )
        if epilogue is not None:  # the direct kernel takes no epilogue
            epilogue[2](*epilogue[3])
        return y
    # a dense output (any order of its dims) has its element offsets 0 .. numel - 1: the xindex of a
    # pointwise kernel over it
    dense = sum((n - 1) * s for n, s in zip(y.shape, y.stride())) + 1 == y.numel()
    fused = (
        epilogue is not None and CONV_EPILOGUE == "fused" and y.numel() > 0 and dense
        and epilogue_numel == y.numel() < 2**31
    )
    extra = epilogue[4] if fused else ()
    common = (
        x5, w5, bias if bias is not None else y5, y5, batch, *spatial_in, *spatial, *kernel,
        channels // groups, per_group, *x5.stride(), *w5.stride(), *y5.stride(), *step, *pad, *dil,
        *[*extra, y5, y5, y5, y5, y5, y5][:6],
    )
    meta = dict(
        TRANSPOSED=bool(transposed), HAS_BIAS=bias is not None,
        # input_precision only applies to fp32; other dtypes keep Triton's default (None)
        PRECISION=CONV_FP32_PRECISION if x.dtype == torch.float32 else None,
        HAS_EPILOGUE=fused, STORE_Y=not (fused and epilogue[5]),
        BLOCK_M=CONV_BLOCK_M, BLOCK_N=CONV_BLOCK_N, BLOCK_K=CONV_BLOCK_K,
        num_warps=CONV_WARPS, num_stages=CONV_STAGES,
    )
    fused_loop, taps_loop = (epilogue[0], epilogue[1]) if fused else (_ke_conv_kernel, _ke_conv_taps_kernel)
    tiles_n = triton.cdiv(per_group, CONV_BLOCK_N)
    loop = CONV_LOOP
    if loop == "auto":
        # a tap's K step of fewer than 16 channels is mostly padding (a dot's K is at least 16); a
        # transposed convolution's taps loop skips the taps that miss a stride phase, which pays regardless
        loop = "fused" if not transposed and channels // groups < 16 else "taps"
    if loop == "fused":
        grid = (triton.cdiv(batch * spatial[0] * spatial[1] * spatial[2], CONV_BLOCK_M) * tiles_n, groups)
        fused_loop[grid](*common, **meta)
    else:
        _conv_taps(taps_loop, common, meta, transposed, step, dil, spatial, batch, tiles_n, groups)
    if epilogue is not None and not fused:
        epilogue[2](*epilogue[3])
    return y


def _conv_taps(kernel, common, meta, transposed, step, dil, spatial, batch, tiles_n, groups):
    # "taps": a transposed convolution's outputs by stride phase, a tile of ceil(out / step) per dimension
    phases, rows, ksteps, inverses = 1, batch, [], []
    for s, d, o in zip(step, dil, spatial):
        s = s if transposed else 1
        g, rest = s, d
        while rest:
            g, rest = rest, g % rest
        ksteps.append(s // g)  # the taps reaching one phase are s / gcd(s, d) apart
        inverses.append(pow(d // g, -1, s // g) if s > g else 0)
        phases *= s
        rows *= triton.cdiv(o, s)
    grid = (phases * triton.cdiv(rows, CONV_BLOCK_M) * tiles_n, groups)
    kernel[grid](*common, *ksteps, *inverses, **meta)
