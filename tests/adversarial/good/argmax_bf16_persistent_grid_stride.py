# good: argmax over the last dim of a bf16 (batch, rows, cols) tensor by a persistent kernel: a fixed
# number of programs (a device-count guess guarded for CPU) walks the rows with a grid-stride loop
# `for row in range(pid, n_rows, tl.num_programs(0))`, compares in fp32, writes int64 indices
# spec: kb_bf16_argmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_persistent(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for row in range(pid, n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        best = tl.max(x, axis=0)
        at = tl.min(tl.where(x == best, cols, BLOCK), axis=0)
        tl.store(out_ptr + row, at.to(tl.int64))


def _num_programs(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count * 4
    return 4


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        flat = x.contiguous().view(-1, cols)
        out = torch.empty(flat.shape[0], device=x.device, dtype=torch.long)
        grid = (min(flat.shape[0], _num_programs(x.device)),)
        argmax_persistent[grid](flat, out, flat.shape[0], cols, BLOCK=triton.next_power_of_2(cols))
        return out.view(x.shape[:-1])
