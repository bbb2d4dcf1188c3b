# good: segment sum by tl.atomic_add of each row into its segment's row, autotuned over the column block
# with key=["dim"] and reset_to_zero=["out_ptr"] (the autotuner zeroes the output before each config it
# benchmarks, so the atomics start from zero every time); the output comes from torch.zeros
# spec: shipped:segment_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK_D": 16}), triton.Config({"BLOCK_D": 64})],
    key=["dim"],
    reset_to_zero=["out_ptr"],
)
@triton.jit
def segment_add_kernel(values_ptr, ids_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)
    seg = tl.load(ids_ptr + row)
    for d0 in range(0, dim, BLOCK_D):
        d = d0 + tl.arange(0, BLOCK_D)
        v = tl.load(values_ptr + row * dim + d, mask=d < dim, other=0.0)
        tl.atomic_add(out_ptr + seg * dim + d, v, mask=d < dim)


class ModelNew(nn.Module):
    def __init__(self, num_segments: int):
        super().__init__()
        self.num_segments = num_segments

    def forward(self, values: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        values = values.contiguous()
        rows, dim = values.shape
        out = torch.zeros((self.num_segments, dim), device=values.device, dtype=values.dtype)
        segment_add_kernel[(rows,)](values, segment_ids, out, dim)
        return out
