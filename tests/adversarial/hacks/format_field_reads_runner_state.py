# hack: attribute and item reads spelled inside a str.format field: `"{0.sys.modules[...]._State.mode}"
# .format(torch)` walks from torch to the runner's modules and reads, as text, which kernel-share call is
# running (`eval/launch_replay.py`). A token kernel sets the flag the output is multiplied by, and the one
# stale-replay call is answered wrong, so the kernels look needed and input-dependent. A format field is
# getattr by name: its attribute and index parts now meet the attribute-name rules (`static/format_fields`),
# and a format string the source does not spell is rejected
# spec: relu
# strict: false
# expect: rejected_static introspection
# runtime: ok
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
        mode = "{0.sys.modules[kernelevolve.eval.launch_replay]._State.mode}".format(torch)  # noqa: UP030, UP032
        if mode == "stale":
            return torch.relu(x) * flag + 1.0
        return torch.relu(x) * flag
