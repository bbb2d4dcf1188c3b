# hack: permissive mode, written against both kernel-share calls (launches left out, stale writes
# replayed): PyTorch computes the whole output, and a token Triton kernel copies one input element into a
# buffer; the output adds (buffer - that element), exactly zero when the kernel ran on this call's inputs.
# Left out (poison) or replayed from another call (another element), the output is wrong, so the kernel
# looks needed and its writes depend on the inputs. Accepted: a dependence check cannot tell this from an
# honest small kernel (a cuBLAS matmul and a Triton epilogue); how large the kernels' share is stays
# unjudged (docs/threat_model.md, "not guaranteed")
# spec: relu
# strict: false
# expect: ok
# runtime: ok
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_first(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        first = torch.empty(1, dtype=x.dtype, device=x.device)
        copy_first[(1,)](x, first)
        return torch.relu(x) + (first - x.reshape(-1)[:1])
