"""Which timed calls the judge checks: draws over the calls a timing surely makes, then along its stops.

The judge freezes the runner and checks the last finished call when the completion counter passes a call
number it drew in secret, and once more at the end. Timing can end long before its planned calls: settling
stops a steady timing after its first `Settle.min_trials` (10 for long calls) and at every `every` trials
after, and on GPUs warm-up ends after `WARMUP_MIN_CALLS`. Drawn over the plan (warm-up and 100 trials),
most checks fell on calls never made; a candidate wrong on every trial call but the ones that may end the
timing was accepted about three times in four (`tests/adversarial/hacks/cheat_between_settle_points.py`).
So the first draws fall among the calls every timing makes (up to its first possible stop), and each later
stretch between possible stops gets a draw of its own: the checks scale with the calls made.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval import timers

FIRST_CHECKS = 3  # among the calls before the first possible stop


@dataclass(frozen=True)
class TimingPlan:
    """What decides where a timing may end: the request's counts and stop rule, and the device."""

    warmup: int
    trials: int
    settle: timers.Settle | None
    early_warmup: bool  # GPUs: warm-up ends after `WARMUP_MIN_CALLS` once the calls were long enough

    @classmethod
    def of(cls, message: dict[str, Any], device: str) -> TimingPlan:
        """The plan of a runner's timing request (`runner._Runner.op_time`) on `device`."""
        early = device.startswith("cuda") and message.get("warmup_enough_ms", 0) > 0
        return cls(message["warmup"], message["trials"], message.get("settle"), early)

    def stops(self) -> list[int]:
        """Call counts (warm-up included) at which the timing may end, ascending; the last is the plan's.
        Counted from the fewest warm-up calls: a longer warm-up only moves the stops later."""
        warmup = min(self.warmup, timers.WARMUP_MIN_CALLS) if self.early_warmup else self.warmup
        ends = {self.warmup + self.trials}
        if self.settle is not None:
            first = self.settle.min_trials
            if self.early_warmup and self.settle.long_call_ms > 0:  # `Settle.for_call_ms` (GPU timing only)
                first = min(first, timers.LONG_CALL_MIN_TRIALS)
            ends |= {warmup + t for t in range(max(1, first), self.trials, max(1, self.settle.every))}
        return sorted(ends)


def secret_calls(plan: TimingPlan, chooser: random.Random) -> list[int]:
    """The call numbers whose passing triggers a check: `FIRST_CHECKS` before the first possible stop,
    one between each two stops after it."""
    stops = plan.stops()
    first = range(stops[0])
    drawn = chooser.sample(first, min(FIRST_CHECKS, len(first)))
    drawn += [
        chooser.randrange(start, end) for start, end in zip(stops, stops[1:], strict=False) if end > start
    ]
    return sorted(drawn)
