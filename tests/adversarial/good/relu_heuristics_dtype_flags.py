# good: relu with @triton.heuristics (an EVEN flag from the arguments drops the mask), a constexpr flag chosen
# per dtype (fp16/bf16 computed in fp32), an empty-input early exit, shape/contiguity asserts with f-string
# messages and a torch.no_grad() decorator on forward
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl

_HALF_TYPES = (torch.float16, torch.bfloat16)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, UPCAST: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:  # noqa: SIM108 (constexpr branches, as kernels often write them)
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if UPCAST:  # noqa: SIM108
        y = tl.maximum(x.to(tl.float32), 0.0).to(x.dtype)
    else:
        y = tl.maximum(x, 0.0)
    if EVEN:  # noqa: SIM108 (constexpr branches, as kernels often write them)
        tl.store(out_ptr + offs, y)
    else:
        tl.store(out_ptr + offs, y, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.is_floating_point(), f"relu kernel expects a floating tensor, got {x.dtype}"
        out = torch.empty_like(x)
        if x.numel() == 0:
            return out
        x = x.contiguous()
        n = x.numel()
        block = 128 if n >= 128 else triton.next_power_of_2(n)
        relu_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, UPCAST=x.dtype in _HALF_TYPES)
        return out
