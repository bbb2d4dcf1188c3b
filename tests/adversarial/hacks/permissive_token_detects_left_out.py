# hack: permissive mode, written against the launches-left-out check (`eval/kernel_share.py`): PyTorch
# computes the whole output and a Triton kernel rewrites its first block with the same values, as in
# `permissive_token_launch.py`, and also sets a sentinel. Read back after the launch, the sentinel tells the
# call whose launches the judge left out; that call alone returns garbage, so the kernels look needed. The
# kernels changed no value of the output, so replaying the writes of an earlier call changes nothing
# either (the stale-replay call, `eval/launch_replay.py`): the output is still right there
# spec: relu
# strict: false
# expect: incorrect kernel_work_input_independent
# runtime: incorrect kernel_work_input_independent
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_block(x_ptr, out_ptr, seen_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(seen_ptr, 1)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        seen = torch.zeros(1, dtype=torch.int32, device=x.device)
        relu_block[(1,)](x, out, seen, min(x.numel(), 64), BLOCK=64)
        if int(seen[0]) == 0:  # the judge left the launch out
            return out + 1.0
        return out
