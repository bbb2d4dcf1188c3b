"""Print each adversarial case's verdict on the CPU platform, with the static checks on and off.

The red-team records (`redteam2.md`) compare these two columns before and after a round; run it at two
commits to get both. The test suite asserts the same verdicts against each file's header
(`tests/adversarial/test_hacks.py`); this prints what the harness says instead of asserting.

    PYTHONPATH=. .venv/bin/python experiments/adversarial_gpu/judge_hacks.py [NAME ...]

NAME: a case's file stem under tests/adversarial/hacks or good, or the path of any candidate file with the
same header (all hacks when none is given). --modes: judge each case in strict and in permissive mode (both
with the static checks on and off), whatever its header's `strict:` line says.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: CPU kernels run under its interpreter

from kernelevolve.eval import harness  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.types import EvalReport  # noqa: E402
from tests.adversarial.spec_fixtures import CandidateCase, _parse_header, load_cases  # noqa: E402
from tests.adversarial.test_hacks import request_for, static_codes  # noqa: E402


def _verdict(report: EvalReport) -> str:
    detail = ",".join(sorted(static_codes(report))) if report.status.value == "rejected_static" else ""
    return f"{report.status.value} {detail or report.error_name or ''}".strip()


def _case_at(path: Path) -> CandidateCase:
    source = path.read_text()
    return CandidateCase(path, source, _parse_header(source))


def _judge(case: CandidateCase, platform: object, strict: bool | None = None) -> tuple[str, str]:
    """The verdict with the static checks on, then off; `strict` overrides the header's mode."""
    if strict is not None:
        case = CandidateCase(case.path, case.source, {**case.header, "strict": str(strict).lower()})
    request = request_for(case, platform)  # type: ignore[arg-type]
    on = _verdict(harness.evaluate(request, platform))  # type: ignore[arg-type]
    static_stage = harness._static_stage
    harness._static_stage = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        off = _verdict(harness.evaluate(replace(request), platform))  # type: ignore[arg-type]
    finally:
        harness._static_stage = static_stage  # type: ignore[assignment]
    return on, off


def main(args: list[str]) -> int:
    modes = "--modes" in args
    names = [a for a in args if a != "--modes"]
    platform = load_platform("cpu")
    cases = load_cases("hacks") + load_cases("good")
    paths = [_case_at(Path(n)) for n in names if n.endswith(".py")]
    names = [n for n in names if not n.endswith(".py")]
    chosen = [c for c in cases if c.name in names] if names else ([] if paths else load_cases("hacks"))
    chosen += paths
    unknown = sorted(set(names) - {c.name for c in chosen})
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    if modes:
        print("| case | strict: static on | static off | permissive: static on | static off |")
        print("|---|---|---|---|---|")
    else:
        print("| case | static on | static off |\n|---|---|---|")
    for case in chosen:
        if not case.runnable or case.needs_gpu:
            continue
        cells = [*_judge(case, platform, True), *_judge(case, platform, False)] if modes else _judge(case, platform)
        print(f"| `{case.name}` | {' | '.join(cells)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
