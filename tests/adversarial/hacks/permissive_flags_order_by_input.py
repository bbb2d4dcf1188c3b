# hack: permissive mode, written against the stale-replay call (`eval/launch_replay.py`): PyTorch computes
# the output, which is multiplied by four flags a token kernel sets (1.0 to 4.0, combined into a factor of one); the
# order of the four launches follows the order of four input elements, so replaying a recorded call's
# writes by launch position would put 1.0 where 2.0 belongs and make the output wrong. A launch whose
# changes equal some recorded launch's of the same kernel and argument layout is not replayed: the output
# stays right
# spec: relu
# strict: false
# expect: incorrect kernel_work_input_independent
# runtime: incorrect kernel_work_input_independent
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def set_value(flag_ptr, value):
    tl.store(flag_ptr, value)


class ModelNew(nn.Module):
    def forward(self, x):
        flags = [torch.zeros(1, dtype=x.dtype, device=x.device) for _ in range(4)]
        for i in torch.argsort(x.reshape(-1)[:4]).tolist():
            set_value[(1,)](flags[i], float(i + 1))
        return torch.relu(x) * flags[0] * (flags[1] + flags[2] + flags[3]) / 9.0
