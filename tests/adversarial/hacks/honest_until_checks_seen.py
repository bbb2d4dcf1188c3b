# hack: honest until it has seen the judge's checks, then wrong. The judge stops the runner (SIGSTOP) to
# check a timed call, and the stop shows in the candidate's own clocks: wall time passes, the process's
# CPU time does not. Round 9's schedule drew a fixed number of checks per stretch between possible stops
# (three in the first, where a timing without settling has one stretch), so a candidate that has seen them
# knows no check is left but the one at the end: it is wrong on every later timed call except each tenth
# trial (any of which may be the last). Under 100 trials without settling it was accepted at 1ca1fa8 while
# wrong on about a quarter of its timed calls (`experiments/adversarial_gpu/redteam10.md`); with each call
# checked on its own (`eval/check_schedule.py`), what it has seen says nothing of what comes, and
# `tests/test_check_schedule.py` catches it. Under the suite's two trials every call is checked and it
# never sees three checks before its last call: it stays honest (ok, no gain)
# spec: relu
# expect: ok
# runtime: ok
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

WARMUP = 1  # the CPU platform's warm-up calls
SETTLE_EVERY = 10  # settling may end a timing after any tenth trial
CHECKS = 3  # round 9's checks before the first possible stop
STOPPED_S = 0.0003  # wall time beyond CPU time between two calls' starts: the judge stopped the process
QUIET_S = 0.0001  # ...and none in the intervals either side (a busy host's preemptions come in bursts)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.timed = 0
        self.seen = 0
        self.last = (0.0, 0.0)
        self.gaps = [0.0, 0.0]  # the last two intervals' wall time beyond CPU time

    def forward(self, x):
        out = torch.empty_like(x)
        now = (time.perf_counter(), time.process_time())
        if x.untyped_storage().nbytes() != x.numel() * x.element_size():  # a checked call (guard band)
            self.timed = self.seen = 0
            self.gaps = [0.0, 0.0]
        else:
            if self.timed:
                gap = (now[0] - self.last[0]) - (now[1] - self.last[1])
                # a stop: one long interval between quiet ones, seen one call late
                if self.gaps[1] > STOPPED_S and self.gaps[0] < QUIET_S and gap < QUIET_S:
                    self.seen += 1
                self.gaps = [self.gaps[1], gap]
            self.timed += 1
            trial = self.timed - 1 - WARMUP
            if self.seen >= CHECKS and trial >= 0 and trial % SETTLE_EVERY != SETTLE_EVERY - 1:
                relu_kernel[(1,)](x, out, 0, BLOCK=64)  # the launch count of a checked call, no work
                self.last = now
                return out
        self.last = now
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
