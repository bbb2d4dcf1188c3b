# hack: permissive mode, written against the launches-left-out check (`eval/kernel_share.py`): PyTorch
# computes the whole output, and a token Triton kernel sets a one-element flag the output is multiplied by.
# With the launch left out the flag stays 0 and the output is wrong, so the kernel looks needed although
# it computes nothing of the op. Accepted until round 5; now the stale-replay call
# (`eval/launch_replay.py`) writes the flag a recorded call set (the same 1.0) and the output is still
# right: what the kernel changes does not depend on the inputs
# spec: relu
# strict: false
# expect: incorrect kernel_work_input_independent
# runtime: incorrect kernel_work_input_independent
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def set_flag(flag_ptr):
    tl.store(flag_ptr, 1.0)


class ModelNew(nn.Module):
    def forward(self, x):
        flag = torch.zeros(1, dtype=x.dtype, device=x.device)
        set_flag[(1,)](flag)
        return torch.relu(x) * flag
