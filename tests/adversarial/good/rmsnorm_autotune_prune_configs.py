# good: Llama-style RMSNorm over (batch, seq, dim) with @triton.autotune whose prune_configs_by
# early_config_prune drops the block sizes smaller than the row (key on the row width), the grid a
# lambda over META; the module's own weight of ones (perturbed like the reference's)
# spec: shipped:rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _prune(configs, named_args, **kwargs):
    cols = named_args["cols"]
    kept = [c for c in configs if c.kwargs["BLOCK"] >= cols]
    return kept or configs[-1:]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (1024, 4), (4096, 8))],
    key=["cols"],
    prune_configs_by={"early_config_prune": _prune},
)
@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * cols + offs, x * inv * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.reshape(-1, cols)
        out = torch.empty_like(x2)
        rmsnorm_kernel[lambda META: (x2.shape[0],)](x2, self.weight, out, cols, self.eps)
        return out.reshape(x.shape)
