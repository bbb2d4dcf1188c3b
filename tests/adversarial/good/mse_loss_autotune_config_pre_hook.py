# good: MSE loss by tl.atomic_add of block partial sums (already divided by n) into a 0-d fp32 output,
# autotuned over the block with each triton.Config carrying a pre_hook that zeroes the output before the
# launch (the autotuner calls it before every benchmark run and before the real launch)
# spec: kb_mse_loss
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _zero_out(nargs: dict) -> None:
    nargs["out_ptr"].zero_()


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4, pre_hook=_zero_out),
        triton.Config({"BLOCK": 512}, num_warps=8, pre_hook=_zero_out),
    ],
    key=["n"],
)
@triton.jit
def mse_kernel(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
    d = p - t
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0) / n)


class ModelNew(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p, t = predictions.contiguous(), targets.contiguous()
        n = p.numel()
        out = torch.empty((), device=p.device, dtype=torch.float32)
        mse_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](p, t, out, n)
        return out
