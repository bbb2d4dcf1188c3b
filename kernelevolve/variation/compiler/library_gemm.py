"""cuBLAS's matmuls at near-fp32 accuracy on tensor cores, for seeds that keep the library call.

PyTorch runs fp32 matmuls in exact fp32 by default (`torch.backends.cuda.matmul` TF32 off), and so do
eager, torch.compile and the harness's check: on an H200 cuBLAS's exact SGEMM runs near 51 TFLOP/s
(L1/1, 4096^3 in 2.69 ms), where its TF32 and BF16 tensor-core GEMMs run several times faster. As for
convolutions (library_conv.py), "tf32_bf16" splits both operands exactly at TF32's 10 mantissa bits
(tf32_split.py; on a GPU one Triton kernel writes hi and the BF16 pair) and computes a_hi@b_hi in one
TF32 GEMM (exact products), and both cross terms a_hi@b_lo + a_lo@b_hi in one BF16 GEMM over K doubled
([a_hi, a_lo] against [b_lo; b_hi]). The cross terms are within 2^-10 of the result, so BF16's 8-bit
operands and output leave errors near 2^-18 of it, far inside KernelBench's 1e-4, for about two TF32
passes' work.

Over a long K the TF32 term's own accumulation drifts: on the H200 (experiments/gemm_split_error/) the
split's rms relative error grew from 5.2e-6 at K = 2048 to 1.9e-5 at 8192 and 3.8e-5 at 16384, enough to
fail L2/62's check after a GroupNorm over 16-value groups, while the TF32 term summed over K chunks of 1024
in fp32 stayed near 3e-6 at every K. So the TF32 term runs in chunks of `LIBRARY_MM_TF32_K_CHUNK` (a
tunable; 0 runs it in one GEMM), each added to the output by cuBLAS's fp32 epilogue.

In permissive seeds rendered for a GPU, Inductor's `torch.mm/addmm/bmm/baddbmm(...)` host steps call
`_library_matmul(a, b, out=, bias=, alpha=, beta=)` (the argument form of own_gemm.py's `_matmul`);
`LIBRARY_MM_FP32_PRECISION` ("ieee", the plain call, or "tf32_bf16") is a tunable, and GPU seeds come
with a "tf32_bf16" twin (compiler_seed). TF32 is switched on (`torch.backends.cuda.matmul.allow_tf32`)
for the TF32 GEMM only and restored after it, even on an error.
"""

from __future__ import annotations

from kernelevolve.variation.compiler.own_gemm import OwnGemm

LIBRARY_GEMM_FUNCTION = "_library_matmul"

LIBRARY_GEMM_TUNABLES = (
    "# cuBLAS matmuls: exact fp32, or hi/lo splits of both operands in one TF32 and one BF16 GEMM",
    'LIBRARY_MM_FP32_PRECISION = "ieee"  # tune: "ieee", "tf32_bf16"',
    "LIBRARY_MM_TF32_K_CHUNK = 2048  # tune: 1024, 2048, 4096, 0",
)

# needs compiler/tf32_split.py's TF32_SPLIT_SOURCE and TF32_SPLIT_KERNEL_SOURCE beside it (render includes them once)
LIBRARY_GEMM_SOURCE = """
def _ke_torch_matmul(a, b, out, bias, alpha, beta):
    # the call Inductor made: mm/bmm, or addmm/baddbmm with the bias
    if bias is None:
        product = (torch.bmm if a.dim() == 3 else torch.mm)(a, b, out=out)
        return product if alpha == 1 else product.mul_(alpha)
    addmm = torch.baddbmm if a.dim() == 3 else torch.addmm
    return addmm(bias, a, b, beta=beta, alpha=alpha, out=out)


def _ke_k_pair_empty(t, k_dim):
    # a bf16 tensor of t's shape with K doubled, in t's layout (a transposed view, as Inductor passes
    # nn.Linear's weight, stays transposed)
    shape = list(t.shape)
    pair_shape = shape[:k_dim] + [2 * shape[k_dim]] + shape[k_dim + 1 :]
    if t.dim() >= 2 and t.stride(-2) == 1 and t.stride(-1) != 1:
        swapped = pair_shape[:-2] + [pair_shape[-1], pair_shape[-2]]
        return torch.empty(swapped, dtype=torch.bfloat16, device=t.device).transpose(-1, -2)
    return torch.empty(pair_shape, dtype=torch.bfloat16, device=t.device)


def _ke_k_pair(t, hi, k_dim, lo_first):
    # [hi, t - hi] ([t - hi, hi] with lo_first) along the K dim, in bf16, in t's layout; each half written
    # once from t and hi
    k = t.shape[k_dim]
    pair = _ke_k_pair_empty(t, k_dim)
    first, second = pair.narrow(k_dim, 0, k), pair.narrow(k_dim, k, k)
    lo_half, hi_half = (first, second) if lo_first else (second, first)
    hi_half.copy_(hi)
    torch.sub(t, hi, out=lo_half)
    return pair


def _ke_hi_and_k_pair(t, k_dim, lo_first):
    # t's TF32 hi part and its K pair: one fused kernel on a GPU (_ke_split_into) where t's layout allows
    if t.is_cuda:
        hi, pair = torch.empty_like(t), _ke_k_pair_empty(t, k_dim)
        if _ke_split_into(t, hi, pair, 1, k_dim, lo_first):
            return hi, pair
    hi = _ke_tf32_hi(t)
    return hi, _ke_k_pair(t, hi, k_dim, lo_first)


def _ke_tf32_chunked(a_hi, b_hi, out, bias, alpha, beta):
    # the TF32 term over K chunks, each added to out in fp32 (the tensor cores' accumulation over a long K
    # drifts); the first chunk takes the bias
    k = a_hi.shape[-1]
    chunk = LIBRARY_MM_TF32_K_CHUNK if 0 < LIBRARY_MM_TF32_K_CHUNK < k else k
    out = _ke_torch_matmul(a_hi.narrow(-1, 0, chunk), b_hi.narrow(-2, 0, chunk), out, bias, alpha, beta)
    for start in range(chunk, k, chunk):
        size = min(chunk, k - start)
        _ke_torch_matmul(a_hi.narrow(-1, start, size), b_hi.narrow(-2, start, size), out, out, alpha, 1)
    return out


def _ke_matmul_tf32_bf16(a, b, out, bias, alpha, beta):
    # a_hi@b_hi in TF32 GEMMs (with the bias), then alpha * (a_hi@b_lo + a_lo@b_hi) from one BF16 GEMM
    # over K doubled
    a_hi, a_pair = _ke_hi_and_k_pair(a, a.dim() - 1, lo_first=False)
    b_hi, b_pair = _ke_hi_and_k_pair(b, b.dim() - 2, lo_first=True)
    # the legacy flag, as the harness and library_conv set cuDNN's: PyTorch releases since 2.9 may raise on
    # legacy reads (Inductor's among them) after a write through the new fp32_precision API (pytorch#189955)
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    matmul.allow_tf32 = True
    try:
        out = _ke_tf32_chunked(a_hi, b_hi, out, bias, alpha, beta)
    finally:
        matmul.allow_tf32 = before
    cross = (torch.bmm if a.dim() == 3 else torch.mm)(a_pair, b_pair)
    return out.add_(cross, alpha=alpha)


def _library_matmul(a, b, out=None, bias=None, alpha=1, beta=1):
    # (bias * beta +) alpha * a @ b, as own_gemm's _matmul takes it
    fp32 = a.dtype == torch.float32 and b.dtype == torch.float32
    if LIBRARY_MM_FP32_PRECISION == "tf32_bf16" and a.is_cuda and fp32:
        return _ke_matmul_tf32_bf16(a, b, out, bias, alpha, beta)
    return _ke_torch_matmul(a, b, out, bias, alpha, beta)
"""


class LibraryGemm(OwnGemm):
    """Host steps' `torch.mm/addmm/bmm/baddbmm(...)` calls as `_library_matmul(...)` calls."""

    function = LIBRARY_GEMM_FUNCTION
