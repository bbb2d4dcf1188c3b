"""Attacks that span evaluations: what one candidate's runner leaves behind, used by a later one.

Runners may write their compiler caches (shared, so compiles are reused), so a file can outlive the
runner that wrote it. What must not carry over is the knowledge of a later evaluation's inputs: timed
calls get input values drawn afresh in every evaluation, so outputs recorded by an earlier one answer
none of them.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from kernelevolve.platforms import Platform
from kernelevolve.types import Candidate, EvalRequest, Status
from tests.adversarial.spec_fixtures import spec
from tests.adversarial.test_hacks import SETTINGS, _gpu_platform

HACK = Path(__file__).parent / "cross_evaluation" / "memo_replay.py"


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _memo_file() -> Path:
    from kernelevolve.eval import runner_client

    folder = runner_client.separate_caches().get("TRITON_CACHE_DIR") or os.path.expanduser("~/.triton/cache")
    return Path(folder) / "ke_memo_relu.pt"


def _record_then_replay(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelevolve.eval import harness

    # the static checks would reject the file handling; the point is what the judge alone does
    monkeypatch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
    memo = _memo_file()
    memo.unlink(missing_ok=True)
    settings = replace(SETTINGS, strict=False)
    try:
        first = harness.evaluate(
            EvalRequest(
                Candidate(HACK.read_text(), "triton", "record"), spec("relu"), platform.name, settings
            ),
            platform,
        )
        assert first.status is Status.OK, first.feedback[:800]
        assert memo.is_file(), "the recording evaluation could not write its memo: the test proves nothing"
        second = harness.evaluate(
            EvalRequest(
                Candidate(HACK.read_text(), "triton", "replay"), spec("relu"), platform.name, settings
            ),
            platform,
        )
        assert second.status is Status.INCORRECT, f"{second.status.value}: {second.feedback[:800]}"
    finally:
        memo.unlink(missing_ok=True)


def test_outputs_recorded_by_one_evaluation_answer_no_later_timed_call(
    cpu_platform: Platform, interpreted: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_then_replay(cpu_platform, monkeypatch)


@pytest.mark.gpu
def test_outputs_recorded_by_one_evaluation_answer_no_later_timed_call_on_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # compile for real
    _record_then_replay(_gpu_platform(), monkeypatch)
