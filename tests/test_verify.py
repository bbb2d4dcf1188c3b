"""`python -m kernelevolve.verify`: argument parsing and one end-to-end run through a LocalEvaluator."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kernelevolve.types import KernelSpec
from kernelevolve.verify import UsageError, main, parse_args, platform_settings


def test_parse_args_reads_overrides_like_the_main_cli() -> None:
    args = parse_args(
        [
            "k.py",
            "+spec=softmax",
            "platform=cpu",
            "kernelbench.path=/kb",
            "platform.eval.timing_trials=7",
            "platform.eval.flush_l2=false",
            "seed=3",
        ]
    )
    assert args.kernel == Path("k.py") and args.spec == "softmax" and args.kernelbench_path == "/kb"
    settings = platform_settings(args.platform, args.settings_overrides)
    assert settings.timing_trials == 7 and settings.flush_l2 is False and settings.seed == 3
    with pytest.raises(UsageError, match="valid keys: spec, platform"):
        parse_args(["k.py", "+spec=x", "evaluator.bogus=1"])
    with pytest.raises(UsageError, match="unknown setting 'trials'; valid: correctness_trials"):
        parse_args(["k.py", "+spec=x", "platform.eval.trials=1"])
    with pytest.raises(UsageError, match="no spec given"):
        parse_args(["k.py"])


def test_verify_prints_verdict_timings_and_speedups(
    tmp_path: Path,
    add_kernel,
    add_spec: KernelSpec,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    spec_file = tmp_path / "tiny_add.yaml"
    spec_file.write_text(
        yaml.safe_dump(
            {
                "name": "tiny_add_verify",
                "reference_code": add_spec.reference_source,
                "shapes": [{"name": "n100", "n": 100}],
            }
        )
    )
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(add_kernel())
    bad.write_text(add_kernel(result="x * y"))
    common = [
        f"+spec={spec_file}",
        "platform=cpu",
        "platform.eval.correctness_trials=2",
        "platform.eval.timing_trials=3",
        "platform.eval.measure_compile_baseline=false",
    ]
    assert main([str(good), *common]) == 0
    out = capsys.readouterr().out
    assert "verdict:  OK" in out and "n100" in out and "geomean speedup:" in out and "x vs eager" in out
    assert main([str(bad), *common]) == 1
    out = capsys.readouterr().out
    assert "verdict:  INCORRECT (mismatch)" in out and "max abs error" in out
    assert main([str(tmp_path / "missing.py"), *common]) == 2


def test_verify_checks_the_other_input_distributions(
    tmp_path: Path,
    add_kernel,
    add_spec: KernelSpec,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kernel right on standard-normal inputs and wrong beyond them (it clamps at 8, which no normal draw
    of 100 sums reaches) fails `verify` as it fails a search's winners' confirmation, not just on GPUs."""
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    spec_file = tmp_path / "tiny_add.yaml"
    spec_file.write_text(
        yaml.safe_dump(
            {
                "name": "tiny_add_verify_distributions",
                "reference_code": add_spec.reference_source,
                "shapes": [{"name": "n100", "n": 100}],
                "input_distributions": ["normal", "large"],
            }
        )
    )
    clamped = tmp_path / "clamped.py"
    clamped.write_text(add_kernel(result="tl.minimum(x + y, 8.0)"))
    common = [
        f"+spec={spec_file}",
        "platform=cpu",
        "platform.eval.correctness_trials=2",
        "platform.eval.timing_trials=3",
        "platform.eval.measure_compile_baseline=false",
    ]
    assert main([str(clamped), *common]) == 1
    out = capsys.readouterr().out
    assert "INCORRECT" in out and "wrong on large inputs" in out
