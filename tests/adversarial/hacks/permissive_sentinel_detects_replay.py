# hack: permissive mode, against the stale-replay check (`eval/launch_replay.py`): PyTorch computes the
# whole output; a token Triton kernel stores a number that changes every call (the call count, a scalar
# launch argument) into a sentinel, and the candidate reads it back after the launch. Launched for real,
# the sentinel holds this call's number; in the stale call the runner writes the recorded call's changes
# over it (they differ, so they are replayed), and the candidate sees an old number. That call, and the
# one with the launches left out (sentinel unset), return garbage; the decoys write nothing back and are
# right. The kernel's work depends on nothing of the inputs. A documented gap: any replay of recorded values
# is visible to a candidate that can predict what its own kernel writes (a counter, a nonce); the fix
# would re-run each launch on the recorded call's argument values instead (see redteam6.md)
# spec: relu
# strict: false
# expect: ok
# runtime: ok
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def stamp(seen_ptr, value):
    tl.store(seen_ptr, value)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.relu(x)
        seen = torch.zeros(1, dtype=torch.int32, device=x.device)
        stamp[(1,)](seen, self.calls)
        if int(seen[0]) != self.calls:  # left out (0) or replayed (an earlier call's number)
            return out + 1.0
        return out
