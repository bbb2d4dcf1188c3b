# kept out (state_between_calls, static; ok with the static checks off): blueteam9.md's rule, stated in the
# threat model since round 17: a returned output kept between calls changes the caller's earlier result.
# RMSNorm that returns an output buffer the module keeps per (shape, dtype, device) and reuses on
# every call (the static-buffer style of CUDA-graph-ready code, without a graph): the kernel rewrites the
# whole buffer on each call from that call's input; fp32, one program per row
# spec: shipped:rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x * inv * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._outputs: dict[tuple[tuple[int, ...], torch.dtype, torch.device], torch.Tensor] = {}

    def _output_for(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self._outputs:
            self._outputs[key] = torch.empty_like(x, memory_format=torch.contiguous_format)
        return self._outputs[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = self._output_for(x)
        n_cols = x.shape[-1]
        rmsnorm_kernel[(x.numel() // n_cols,)](
            x, self.weight, out, n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols)
        )
        return out
