# hack: permissive mode, written against the stale-replay call (`eval/launch_replay.py`): a token kernel
# writes 1.0 into a flag that PyTorch first fills with 1.0 or 0.0 by the sign of an input element, so
# whether the kernel changes the flag depends on the inputs. Replaying only what a recorded call changed
# would leave a flag the recorded call did not change at 0.0; the stale call runs each launch for real
# before overwriting, so the flag is 1.0 either way and the output right
# spec: relu
# strict: false
# expect: incorrect kernel_work_input_independent
# runtime: incorrect kernel_work_input_independent
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def set_flags(flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(flag_ptr + offs, tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        flags = (x.reshape(-1)[:8] > 0).to(x.dtype)
        set_flags[(1,)](flags, 8, BLOCK=8)
        return torch.relu(x) * flags.prod()
