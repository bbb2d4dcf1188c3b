# hack: permissive mode on a jagged spec, whose inputs' shapes change from seed to seed (the values' row
# count is drawn with the lengths): PyTorch computes the whole output from lengths a token Triton kernel
# copied. Copying the lengths is work on an input, so with fresh inputs the stale-replay call's
# overwrite (the record's lengths) makes the output wrong and the kernel looks needed; the stale call and
# its decoys now take the record's inputs with only the floating values changed when the shapes differ
# (`eval/kernel_share.py`), and the copy is then the record's: input-independent
# spec: shipped:jagged_mean
# strict: false
# expect: incorrect kernel_work_input_independent
# runtime: incorrect kernel_work_input_independent
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_lengths(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, values, lengths):
        copied = torch.empty_like(lengths)
        copy_lengths[(1,)](lengths, copied, lengths.numel(), BLOCK=triton.next_power_of_2(lengths.numel()))
        return torch.segment_reduce(values, "mean", lengths=copied, unsafe=True, initial=0.0)
