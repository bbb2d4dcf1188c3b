# hack: permissive mode, the flag of `permissive_flag_dependent_output.py` on a spec whose reference holds
# parameters (linear + relu): PyTorch computes the output, a token kernel sets the flag it is multiplied by.
# Accepted: where the reference holds state, an honest kernel may compute from the parameters alone (the
# same in the recorded and the stale call), so the stale-replay call decides nothing there
# (`eval/kernel_share.py`; varying the state between the two calls would close it)
# spec: linear_relu
# strict: false
# expect: ok
# runtime: ok
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def set_flag(flag_ptr):
    tl.store(flag_ptr, 1.0)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        flag = torch.zeros(1, dtype=x.dtype, device=x.device)
        set_flag[(1,)](flag)
        return torch.relu(self.linear(x)) * flag
