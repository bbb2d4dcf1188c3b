# good: int8-weight linear in fp16 whose launcher asks the process about its modes before choosing a path,
# as library code does: torch.compiler.is_compiling() (skip the host-side shape checks under
# torch.compile), torch.is_inference_mode_enabled() and torch.is_autocast_enabled()
# (recorded in an error message only), torch.accelerator in a device check; the GEMM dequantizes the int8
# tile in registers and accumulates in fp32
# spec: shipped:int8_weight_linear
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def w8_linear_kernel(
    x_ptr, w_ptr, s_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    scale = tl.load(s_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0
        )
        # the reference rounds weight * scale to fp16 before the matmul
        wq = (w.to(tl.float32) * scale.to(tl.float32)[None, :]).to(tl.float16)
        acc = tl.dot(a, wq, acc)
    tl.store(
        out_ptr + rm[:, None] * N + rn[None, :],
        acc.to(tl.float16),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def _checks_allowed() -> bool:
    return not torch.compiler.is_compiling()


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        if _checks_allowed() and x.shape[-1] != weight.shape[1]:
            modes = (
                f"inference_mode={torch.is_inference_mode_enabled()}, autocast={torch.is_autocast_enabled()}"
            )
            raise ValueError(f"in_features differ: {x.shape[-1]} vs {weight.shape[1]} ({modes})")
        if torch.accelerator.is_available() and x.device != weight.device:
            raise ValueError(
                f"x on {x.device}, weight on {weight.device} (accelerator {torch.accelerator.current_accelerator()})"
            )
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        m, k = x2.shape
        n = weight.shape[0]
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(m, 16), triton.cdiv(n, 16))
        w8_linear_kernel[grid](x2, weight.contiguous(), scale.contiguous(), out, m, n, k, BM=16, BN=16, BK=16)
        return out.reshape(*x.shape[:-1], n)
