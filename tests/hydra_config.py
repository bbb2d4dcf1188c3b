"""A run config composed from conf/ as the CLI would, for end-to-end tests of run_search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Small enough for a 2-core CI machine: few trials, no torch.compile baseline, no knowledge base.
FAST_RUN = (
    "platform.eval.timing_trials=3",
    "platform.eval.correctness_trials=2",
    "platform.eval.warmup_trials=1",
    "platform.eval.measure_compile_baseline=false",
    "kb.enabled=false",
    "kb.record_past_wins=false",
    "progress=false",
)


def compose_run_config(overrides: Sequence[str]) -> dict[str, Any]:
    from kernelevolve.config import compose, to_plain

    return to_plain(compose(overrides))
