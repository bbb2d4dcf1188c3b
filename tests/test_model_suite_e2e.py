"""A sample of eight model-suite specs, each searched end to end on CPU through the sweep's `--specs`: the
recommendation and language-model operators in their own dtypes (bf16, fp16, int64 ids) get a correct
kernel within two evaluations, and the sweep records and summarises them as level 0.

Marked slow: about two minutes on a 2-core machine (two evaluations a spec, the fast run settings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.bench.sweep.driver import Sweep
from kernelevolve.bench.sweep.run import SweepError
from kernelevolve.bench.sweep.suite import suite_names, suite_problems
from kernelevolve.bench.sweep.summary import load_records
from tests.sweep_options import FAST_SETS, sweep_options

# One of each kind the suite holds, each with a seed that runs quickly under the interpreter.
SAMPLE = (
    "bucketize",  # fp32 in, int64 out (compiler seed)
    "feature_hash",  # int64 only: our signbit in the interpreter (compiler seed)
    "embedding_bag_mean",  # fp16, an ATen fallback for Inductor: our template
    "jagged_mean",  # segment_reduce, a fallback too: our template
    "dequantize_int8",  # int8 x fp16 scales
    "quantize_int8",  # bf16 in, int8 out: torch.round as our nearbyint
    "rmsnorm_llama",  # bf16 with float32 statistics
    "moe_gather",  # bf16 row gather
)


def test_suite_problems_are_the_shipped_specs_in_a_stable_order() -> None:
    names = suite_names()
    problems = suite_problems(["rope,swiglu", "bucketize"])
    assert [p.name for p in problems] == ["bucketize", "rope", "swiglu"]
    assert all(p.level == 0 and p.spec == p.name for p in problems)
    assert [p.problem_id for p in problems] == [names.index(p.name) + 1 for p in problems]
    assert len(suite_problems(["all"])) == len(names) >= 40
    with pytest.raises(SweepError, match="not shipped specs"):
        suite_problems(["softmax", "no_such_spec"])


@pytest.mark.slow
def test_a_sample_of_the_suite_is_searched_end_to_end_on_cpu(tmp_path: Path) -> None:
    options = sweep_options(
        tmp_path,
        specs=SAMPLE,
        levels=(0,),
        budget_evals=2,
        # the two evaluations bound each search; the wall clock is set loose, so load from tests running
        # beside this one (two workers on CI's two cores) cannot end a search early
        budget_seconds=300.0,
        permissive=True,
        quiet_baselines=False,
        parallel=2,  # two searches at once: each waits on its evaluation child much of the time
        sets=(*FAST_SETS, "platform.eval.timing_trials=2", "platform.eval.correctness_trials=1"),
    )
    outcome = Sweep(options).run()
    assert outcome.complete and len(outcome.ran) == len(SAMPLE)
    records = {r["name"]: r for r in load_records(options.out)}
    assert set(records) == set(SAMPLE)
    failed = {name: (r["status"], r.get("error")) for name, r in records.items() if r["status"] != "ok"}
    assert not failed, failed
    assert all(r["spec"] == r["name"] and r["level"] == 0 for r in records.values())
    summary = (options.out / "summary.md").read_text()
    assert "level 0" in summary and "Permissive" in summary
