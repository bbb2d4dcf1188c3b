# good: relu whose launch configuration is chosen by a match statement (a sequence pattern on the shape,
# a keyword class pattern on the input's dtype, a capture of the whole input) and cached per size in
# self.__dict__ under a literal key; the kernel does all the work
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def _block_for(n: int) -> int:
    match n:
        case 0:
            return 16
        case int(size) if size <= 256:
            return triton.next_power_of_2(size)
        case _:
            return 1024


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        blocks = self.__dict__.setdefault("_blocks", {})
        match x.shape:
            case (n,):
                pass
            case _:
                n = x.numel()
        match x:
            case torch.Tensor(dtype=torch.float32 | torch.float16 | torch.bfloat16) as flat:
                flat = flat.contiguous()
            case flat:
                raise TypeError(f"unsupported dtype {flat.dtype}")
        if n not in blocks:
            blocks[n] = _block_for(n)
        block = blocks[n]
        out = torch.empty_like(flat)
        relu_kernel[(triton.cdiv(n, block),)](flat, out, n, BLOCK=block)
        return out
