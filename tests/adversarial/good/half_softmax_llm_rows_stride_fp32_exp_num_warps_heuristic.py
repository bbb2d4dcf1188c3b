# good: KernelBench fp16 softmax(dim=-1), the Triton tutorial as LLMs reproduce it: one program per row,
# `BLOCK_SIZE = triton.next_power_of_2(n_cols)`, `num_warps` picked from the block size, row strides
# from `x.stride(0)` / `y.stride(0)`, -inf padding, fp32 math and fp16 store, `x.reshape(-1, n_cols)` for any
# leading shape and `.view(orig_shape)` back
# spec: kb_half_softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(
    output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr
):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf")).to(tl.float32)
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output.to(tl.float16), mask=col_offsets < n_cols)


def _num_warps(block_size: int) -> int:
    """Heuristic from the tutorial: more warps for wider rows."""
    if block_size >= 8192:
        return 16
    if block_size >= 2048:
        return 8
    return 4


def softmax(x: torch.Tensor) -> torch.Tensor:
    orig_shape = x.shape
    x2 = x.reshape(-1, orig_shape[-1]).contiguous()
    n_rows, n_cols = x2.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    y = torch.empty_like(x2)
    softmax_kernel[(n_rows,)](
        y, x2, x2.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE)
    )
    return y.view(orig_shape)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax(x)
