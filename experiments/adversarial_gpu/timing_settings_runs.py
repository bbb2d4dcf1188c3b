"""Judge candidate files repeatedly on the CPU under a timing setting the test suite does not use, printing
each run's verdict and median (red-team round 9, `redteam9.md`).

The suite's settings (two timing trials, one warm-up call, no settling) check every timed call, so a
candidate wrong only where no check reaches, or timed faster than it ran, shows only under longer timings:

    PYTHONPATH=. .venv/bin/python experiments/adversarial_gpu/timing_settings_runs.py \
        [--settle] [--trials N] [--runs N] [--permissive] [--static-off] FILE ...

--settle: 100 trials that settle after their first 10 (any spread counts as steady), one warm-up call.
--trials N: N trials, one warm-up call, no settling (default 2).
Run it with the working directory at the tree being judged (the runner starts as `python -m`).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: CPU kernels run under its interpreter

from kernelevolve.eval import harness  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from tests.adversarial import test_hacks  # noqa: E402
from tests.adversarial.spec_fixtures import CandidateCase, _parse_header  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--settle", action="store_true")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--permissive", action="store_true")
    parser.add_argument("--static-off", action="store_true")
    args = parser.parse_args()
    settings = replace(test_hacks.SETTINGS, timing_trials=args.trials, warmup_trials=1)
    if args.settle:
        settings = replace(
            settings,
            timing_trials=100,
            settle_relative_halfwidth=100.0,
            settle_min_trials=10,
            settle_long_call_ms=0.0,
        )
    test_hacks.SETTINGS = settings
    if args.static_off:
        harness._static_stage = lambda *a, **k: None  # type: ignore[assignment]
    platform = load_platform("cpu")
    for name in args.files:
        path = Path(name)
        source = path.read_text()
        header = _parse_header(source)
        if args.permissive:
            header["strict"] = "false"
        case = CandidateCase(path, source, header)
        for _ in range(args.runs):
            report = harness.evaluate(test_hacks.request_for(case, platform), platform)
            medians = {k: (round(v.median_ms, 3), v.trials) for k, v in (report.latency or {}).items()}
            print(path.stem, report.status.value, report.error_name or "", medians, flush=True)


if __name__ == "__main__":
    main()
