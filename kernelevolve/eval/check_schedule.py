"""Which timed calls the judge checks: each call on its own, with one fixed chance, whatever came before.

The judge freezes the runner and checks the last finished call when the completion counter passes a call
number it drew in secret, and once more at the end. Timing can end long before its planned calls: settling
stops a steady timing after its first `Settle.min_trials` (10 for long calls) and at every `every` trials
after, and on GPUs warm-up ends after `WARMUP_MIN_CALLS`. Round 9 drew a fixed number of checks per stretch
between possible stops (three before the first, one in each after). A stop shows in the candidate's own
clock (a gap its wall clock sees and its CPU clock does not), so a candidate that counted the checks it had
seen knew when a stretch had none left and was wrong from then to the stretch's end, never caught
(`tests/adversarial/hacks/honest_until_checks_seen.py`). So every call is now checked independently with
the same chance: what a candidate has seen says nothing of what comes, and each wrong call is caught with
that chance, however it chose its moment. The chance gives the calls before the first possible stop the
`FIRST_CHECKS` they had (in expectation), and is never below `MIN_RATE`, so long timings without stops are
checked throughout; a timing of `FIRST_CHECKS` calls or fewer has every call checked.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval import timers

FIRST_CHECKS = 3  # expected among the calls before the first possible stop
MIN_RATE = 0.1  # the one-in-ten of round 9's stretches after the first stop


@dataclass(frozen=True)
class TimingPlan:
    """What decides where a timing may end: the request's counts and stop rule, and the device."""

    warmup: int
    trials: int
    settle: timers.Settle | None
    early_warmup: bool  # GPUs: warm-up ends after `WARMUP_MIN_CALLS` once the calls were long enough
    race: bool = False  # a loser may be given up on (`timers.Race`)

    @classmethod
    def of(cls, message: dict[str, Any], device: str) -> TimingPlan:
        """The plan of a runner's timing request (`runner._Runner.op_time`) on `device`."""
        early = device.startswith("cuda") and message.get("warmup_enough_ms", 0) > 0
        race = message.get("race") is not None
        return cls(message["warmup"], message["trials"], message.get("settle"), early, race)

    def ends_at(self, made: int, samples: int, stopped_by: str) -> bool:
        """Whether a timing of this plan may end after `made` calls with `samples` timed samples, stopped by
        the rule named (`""`: none). A runner that reported fewer calls than it made hid the last ones from
        every check; one that reported fewer samples than it timed left out the slow ones."""
        if stopped_by == timers.RACE_STOP:
            return self.race
        if stopped_by == timers.SETTLED_STOP:
            if self.settle is None or self.early_warmup:
                return self.settle is not None
            trials = made - self.warmup  # where the rule, or its long calls' form, asks whether to stop
            stops = any(rule.checks_at(trials) for rule in (self.settle, self.settle.for_call_ms(math.inf)))
            return stops and samples == trials
        every_call = self.early_warmup or made == self.warmup + self.trials
        return stopped_by == "" and samples == self.trials and every_call

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


@dataclass(frozen=True)
class CheckRate:
    """The chance that each call of a timing is checked, and the calls it applies to."""

    per_call: float
    calls: int  # the plan's calls, warm-up included

    @classmethod
    def of(cls, plan: TimingPlan) -> CheckRate:
        """`FIRST_CHECKS` expected before the plan's first possible stop (the fewest calls a timing makes),
        at least `MIN_RATE`, at most every call."""
        stops = plan.stops()
        return cls(min(1.0, max(MIN_RATE, FIRST_CHECKS / max(1, stops[0]))), stops[-1])

    def expected(self, made: int) -> float:
        """Checks expected in a timing that made `made` calls (besides the one at its end)."""
        return self.per_call * min(made, self.calls)


def secret_calls(plan: TimingPlan, chooser: random.Random) -> list[int]:
    """The call numbers whose passing triggers a check: each call drawn on its own at `CheckRate.of(plan)`
    (a rate of 1 draws every call without consulting the chooser)."""
    rate = CheckRate.of(plan)
    return [call for call in range(rate.calls) if rate.per_call >= 1.0 or chooser.random() < rate.per_call]


def chooser() -> random.Random:
    """The judge's source of draws: the operating system's, which nothing in the runner can predict
    (tests put a seeded one in its place to replay a schedule)."""
    return random.SystemRandom()
