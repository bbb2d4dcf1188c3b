"""Standalone H200 check (torch only; README.md beside it): does PyTorch's math SDPA backend give extern bmm
calls on CUDA (no re-fusion by Inductor's attention pattern matcher), and what do eager, the compiled math
path and an unfused TF32+BF16 split cost at KernelBench L1/97's size, with what error?"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch._inductor.utils import run_and_get_code
from torch.nn.attention import SDPBackend, sdpa_kernel


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v)


def gpu_ms(fn, repeats: int = 5) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return round(start.elapsed_time(end) / repeats, 2)


def tf32_hi(x: torch.Tensor) -> torch.Tensor:
    return (x.view(torch.int32) & -8192).view(torch.float32)


def split_bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a_hi @ b_hi in TF32, plus both cross terms in one BF16 bmm over K doubled (library_gemm's split)."""
    a_hi, b_hi = tf32_hi(a), tf32_hi(b)
    torch.backends.cuda.matmul.allow_tf32 = True
    out = torch.bmm(a_hi, b_hi)
    torch.backends.cuda.matmul.allow_tf32 = False
    cross = torch.bmm(torch.cat([a_hi, a - a_hi], -1).bfloat16(), torch.cat([b - b_hi, b_hi], -2).bfloat16())
    return out.add_(cross)


def split_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    batch, heads, rows, dim = q.shape
    scores = split_bmm(
        (q * dim**-0.5).reshape(batch * heads, rows, dim), k.reshape(-1, rows, dim).transpose(1, 2)
    )
    return split_bmm(torch.softmax(scores, -1), v.reshape(-1, rows, dim)).view(batch, heads, rows, dim)


def main() -> None:
    q, k, v = (torch.rand(32, 32, 512, 1024, device="cuda") for _ in range(3))  # KernelBench's torch.rand
    reference = attention(q, k, v)
    print("eager ms", gpu_ms(lambda: attention(q, k, v)))
    with sdpa_kernel(SDPBackend.MATH):
        compiled = torch.compile(attention, fullgraph=True)
        out, codes = run_and_get_code(compiled, q, k, v)
        calls = [
            line.strip()[:160]
            for line in codes[0].splitlines()
            if "extern_kernels." in line or "attention" in line and "aten." in line or ".run(" in line
        ]
        print("\n".join(calls))
        error = (out - reference).abs().max().item()
        print("math compiled: max abs error", error, "ms", gpu_ms(lambda: compiled(q, k, v)))
    out = split_attention(q, k, v)
    error = (out - reference).abs().max().item()
    print(
        "tf32_bf16 split (unfused, eager): max abs error",
        error,
        "ms",
        gpu_ms(lambda: split_attention(q, k, v)),
    )


if __name__ == "__main__":
    main()
