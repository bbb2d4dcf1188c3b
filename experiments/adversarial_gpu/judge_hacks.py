"""Print each adversarial case's verdict on the CPU platform, with the static checks on and off.

The red-team records (`redteam2.md`) compare these two columns before and after a round; run it at two
commits to get both. The test suite asserts the same verdicts against each file's header
(`tests/adversarial/test_hacks.py`); this prints what the harness says instead of asserting.

    PYTHONPATH=. .venv/bin/python experiments/adversarial_gpu/judge_hacks.py [NAME ...]

NAME: a case's file stem under tests/adversarial/hacks or good (all hacks when none is given).
"""

from __future__ import annotations

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: CPU kernels run under its interpreter

from kernelevolve.eval import harness  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.types import EvalReport  # noqa: E402
from tests.adversarial.spec_fixtures import load_cases  # noqa: E402
from tests.adversarial.test_hacks import request_for, static_codes  # noqa: E402


def _verdict(report: EvalReport) -> str:
    detail = ",".join(sorted(static_codes(report))) if report.status.value == "rejected_static" else ""
    return f"{report.status.value} {detail or report.error_name or ''}".strip()


def main(names: list[str]) -> int:
    platform = load_platform("cpu")
    cases = load_cases("hacks") + load_cases("good")
    chosen = [c for c in cases if c.name in names] if names else load_cases("hacks")
    unknown = sorted(set(names) - {c.name for c in chosen})
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    static_stage = harness._static_stage
    print("| case | static on | static off |\n|---|---|---|")
    for case in chosen:
        if not case.runnable or case.needs_gpu:
            continue
        on = _verdict(harness.evaluate(request_for(case, platform), platform))
        harness._static_stage = lambda *args, **kwargs: None  # type: ignore[assignment]
        try:
            off = _verdict(harness.evaluate(request_for(case, platform), platform))
        finally:
            harness._static_stage = static_stage  # type: ignore[assignment]
        print(f"| `{case.name}` | {on} | {off} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
