# good: RMSNorm with @triton.autotune over four (BLOCK, num_warps) configs keyed on the width, a
# prune_configs_by early_config_prune dropping blocks narrower than the row (single pass needs the whole
# row) and keeping the smallest two of the rest; the input made contiguous after a transpose-safe
# reshape, the output by torch.empty_like and viewed back
# spec: shipped:rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


def keep_wide_enough(configs, named_args, **kwargs):
    n = named_args["N"]
    wide = [c for c in configs if c.kwargs["BLOCK"] >= n]
    return sorted(wide, key=lambda c: c.kwargs["BLOCK"])[:2] or configs[-1:]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256}, num_warps=2),
        triton.Config({"BLOCK": 512}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
    ],
    key=["N"],
    prune_configs_by={"early_config_prune": keep_wide_enough},
)
@triton.jit
def rmsnorm_rows(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, x * inv * tl.load(w_ptr + cols, mask=mask, other=0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        rmsnorm_rows[(x2.shape[0],)](x2, self.weight, y, x2.shape[1], self.eps)
        return y.view_as(x)
