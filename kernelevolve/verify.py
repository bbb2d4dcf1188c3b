"""Run the whole harness on one kernel file and print the verdict.

    python -m kernelevolve.verify KERNEL.py +spec=<spec> platform=<name> [kernelbench.path=...]
        [seed=0] [strict=true] [backend=triton] [platform.eval.<setting>=<value>]
        [platform.devices=[cuda:0]] [evaluator.workers_per_device=1]
        [kernelbench.judge=KERNELBENCH_CHECKOUT] [kernelbench.judge_timeout_s=600]

Same `key=value` / `+key=value` overrides as the main CLI (parsed here, without Hydra). Evaluation
settings start from conf/platform/<name>.yaml like a search run. Exit code 0 when the kernel is
correct (status OK), 1 otherwise, 2 for a usage error. With `kernelbench.judge`, the kernel also goes
through KernelBench's own evaluator, whose verdict is printed beside ours; the exit code stays ours. That
second judge is a plug-in (`SECOND_JUDGES`, entry point group `kernelevolve.judges`): the bench's.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

import yaml

from kernelevolve.paths import CONF_DIR
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.registry import PluginUnavailableError, Registry, UnknownNameError
from kernelevolve.types import Baseline, Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec

USAGE = (
    "usage: python -m kernelevolve.verify KERNEL.py +spec=<name | op.yaml | kernelbench:L/ID> "
    "platform=<name> [kernelbench.path=...] [platform.eval.<setting>=<value>] [seed=N] [strict=BOOL] "
    "[backend=triton|cute] [platform.devices=[...]] [evaluator.workers_per_device=N] "
    "[kernelbench.judge=KERNELBENCH_CHECKOUT] [kernelbench.judge_timeout_s=S]"
)
_SETTING_NAMES = tuple(f.name for f in fields(EvalSettings))
_PLAIN_KEYS = (
    "spec",
    "platform",
    "kernelbench.path",
    "kernelbench.cpu_budget_elements",
    "kernelbench.judge",
    "kernelbench.judge_timeout_s",
    "seed",
    "strict",
    "backend",
    "platform.devices",
    "evaluator.workers_per_device",
)


class UsageError(ValueError):
    pass


class SecondVerdict(Protocol):
    correct: bool

    def report_lines(self) -> list[str]:
        """Printed below our verdict."""
        ...


class SecondJudge(Protocol):
    """Another evaluator's opinion of the kernel (KernelBench's, from the bench), printed beside ours."""

    def check(self) -> None:
        """Raise ValueError or FileNotFoundError for settings it cannot judge with (a usage error)."""
        ...

    def judge(self, source: str, spec: KernelSpec, backend: str, device: str) -> SecondVerdict: ...


# name -> factory(**options); `<name>.judge=PATH` asks for one (its options: path, timeout_s)
SECOND_JUDGES: Registry[SecondJudge] = Registry("second judge", group="kernelevolve.judges")


@dataclass(frozen=True)
class VerifyArgs:
    kernel: Path
    spec: str
    platform: str = "cpu"
    kernelbench_path: str | None = None
    cpu_budget_elements: int = 1 << 16
    backend: str | None = None
    settings_overrides: tuple[tuple[str, Any], ...] = ()
    devices: tuple[str, ...] | None = None
    workers_per_device: int = 1
    judge: SecondJudge | None = None  # KernelBench's own evaluator as a second judge


@dataclass(frozen=True)
class VerifyResult:
    report: EvalReport
    baselines: dict[str, Baseline]
    second: SecondVerdict | None = None  # the second judge's, where one was asked for

    @property
    def ok(self) -> bool:
        return self.report.ok


def parse_args(argv: list[str]) -> VerifyArgs:
    """One positional kernel path plus `key=value` overrides (a leading '+' is accepted and ignored)."""
    kernel: Path | None = None
    values: dict[str, Any] = {}
    overrides: list[tuple[str, Any]] = []
    for arg in argv:
        if "=" not in arg:
            if kernel is not None:
                raise UsageError(f"more than one kernel file given ({kernel}, {arg})")
            kernel = Path(arg)
            continue
        key, _, raw = arg.lstrip("+").partition("=")
        value = yaml.safe_load(raw) if raw else None
        if key.startswith("platform.eval."):
            name = key.removeprefix("platform.eval.")
            if name not in _SETTING_NAMES:
                raise UsageError(f"unknown setting {name!r}; valid: {', '.join(_SETTING_NAMES)}")
            overrides.append((name, value))
        elif key in _PLAIN_KEYS:
            values[key] = value
        else:
            valid = ", ".join((*_PLAIN_KEYS, "platform.eval.<setting>"))
            raise UsageError(f"unknown override {key!r}; valid keys: {valid}")
    if kernel is None:
        raise UsageError("no kernel file given")
    if not values.get("spec"):
        raise UsageError("no spec given: add +spec=<shipped name | path/to/op.yaml | kernelbench:LEVEL/ID>")
    for key in ("seed", "strict"):
        if key in values:
            overrides.append((key, values[key]))
    devices = values.get("platform.devices")
    judge_path = values.get("kernelbench.judge")
    judge = (
        second_judge(
            "kernelbench",
            path=str(judge_path),
            timeout_s=float(values.get("kernelbench.judge_timeout_s") or 600.0),
        )
        if judge_path
        else None
    )
    return VerifyArgs(
        kernel=kernel,
        spec=str(values["spec"]),
        platform=str(values.get("platform") or "cpu"),
        kernelbench_path=values.get("kernelbench.path") or os.environ.get("KERNELBENCH_PATH"),
        cpu_budget_elements=int(values.get("kernelbench.cpu_budget_elements") or 1 << 16),
        backend=values.get("backend"),
        settings_overrides=tuple(overrides),
        devices=tuple(str(d) for d in devices) if devices else None,
        workers_per_device=int(values.get("evaluator.workers_per_device") or 1),
        judge=judge,
    )


def second_judge(name: str, **options: Any) -> SecondJudge:
    """The second judge `name` (a plug-in); UsageError, one line, where it is not installed."""
    try:
        return SECOND_JUDGES.create(name, **options)
    except (UnknownNameError, PluginUnavailableError) as exc:
        raise UsageError(f"{name}.judge needs the {name} second judge: {exc}") from None


def platform_settings(platform_name: str, overrides: tuple[tuple[str, Any], ...] = ()) -> EvalSettings:
    """EvalSettings as a search run on this platform gets them (conf/platform/<name>.yaml), then overrides."""
    options: dict[str, Any] = {}
    path = CONF_DIR / "platform" / f"{platform_name}.yaml"
    if path.is_file():
        options.update((yaml.safe_load(path.read_text()) or {}).get("eval") or {})
    options.update(dict(overrides))
    unknown = sorted(set(options) - set(_SETTING_NAMES))
    if unknown:
        raise UsageError(f"{path}: unknown eval setting(s) {unknown}; valid: {', '.join(_SETTING_NAMES)}")
    return EvalSettings(**options)


def guess_backend(source: str) -> str:
    return "cute" if "cutlass" in source else "triton"


def verify(
    source: str,
    spec: KernelSpec,
    platform: Platform,
    settings: EvalSettings,
    backend: str | None = None,
    devices: list[str] | None = None,
    workers_per_device: int = 1,
    judge: SecondJudge | None = None,
) -> VerifyResult:
    """Evaluate `source` through a LocalEvaluator (child processes), with the spec's baselines; with
    `judge`, then through KernelBench's own evaluator too (once ours has let the GPU go). A kernel that
    passes is also checked on the spec's other input distributions, as a search's winners are
    (`results.winners.with_distribution_checks`): a verdict of "ok" on standard-normal inputs alone would
    pass a ReLU that clamps at 8."""
    from kernelevolve.eval.local import LocalEvaluator
    from kernelevolve.results.winners import distribution_check_requests, with_distribution_checks

    candidate = Candidate(source, backend or guess_backend(source), operator="verify", mode="seed")
    with LocalEvaluator(platform, settings, devices, workers_per_device) as evaluator:
        report = evaluator.submit(EvalRequest(candidate, spec, platform.name, settings)).result()
        if report.ok:
            requests = distribution_check_requests(candidate, spec, platform.name, settings)
            futures = {name: evaluator.submit(request) for name, request in requests.items()}
            checks = {name: future.result() for name, future in futures.items()}
            report = with_distribution_checks(report, checks, settings.seed)
        baselines = evaluator.baselines(spec, platform.name)
    second = None
    if judge is not None:
        device = next((d for d in devices or () if d.startswith("cuda")), "cuda:0")
        second = judge.judge(source, spec, candidate.backend, device)
    return VerifyResult(report, baselines, second)


def format_result(result: VerifyResult, spec: KernelSpec, platform: Platform, kernel: str = "") -> str:
    report = result.report
    lines = [
        f"kernel:   {kernel or report.candidate_id} (id {report.candidate_id})",
        f"spec:     {spec.name} ({spec.origin}), dtype {spec.dtype}, atol {spec.atol:g}, rtol {spec.rtol:g}",
        f"platform: {platform.name} on {report.worker}, {report.wall_s:.1f} s",
        f"verdict:  {report.status.value.upper()}" + (f" ({report.error_name})" if report.error_name else ""),
    ]
    if report.max_abs_error is not None:
        lines.append(f"max abs error: {report.max_abs_error:.3g}")
    if report.flags:
        lines.append(f"flags:    {', '.join(report.flags)}")
    if report.feedback:
        lines += ["", report.feedback.rstrip(), ""]
    header = (
        f"{'shape':<16}{'kernel ms':>12}{'eager ms':>12}{'compile ms':>12}{'vs eager':>10}{'vs compile':>12}"
    )
    lines += [header, "-" * len(header)]
    for shape in spec.shapes:
        timing = report.latency.get(shape.name)
        base = result.baselines.get(shape.name)
        kernel_ms = timing.median_ms if timing else None
        eager_ms = base.eager.median_ms if base else None
        compile_ms = base.compiled.median_ms if base and base.compiled else None
        lines.append(
            f"{shape.name:<16}{_ms(kernel_ms):>12}{_ms(eager_ms):>12}{_ms(compile_ms):>12}"
            f"{_ratio(eager_ms, kernel_ms):>10}{_ratio(compile_ms, kernel_ms):>12}"
        )
    errors = {name: b.compile_error for name, b in result.baselines.items() if b.compile_error}
    for name, error in errors.items():
        lines.append(f"torch.compile failed at {name}: {error.splitlines()[0] if error else ''}")
    if report.ok:
        from kernelevolve.search.fitness import score

        fitness = score(report, result.baselines)
        vs_compile = f"{fitness.speedup_vs_compile:.3f}x" if fitness.speedup_vs_compile else "n/a"
        lines.append(f"geomean speedup: {fitness.objective:.3f}x vs eager, {vs_compile} vs torch.compile")
    if result.second is not None:
        lines += result.second.report_lines()
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def _ratio(baseline: float | None, kernel: float | None) -> str:
    return f"{baseline / kernel:.2f}x" if baseline and kernel else "-"


def main(argv: list[str] | None = None) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        args = parse_args(list(sys.argv[1:] if argv is None else argv))
        if not args.kernel.is_file():
            raise UsageError(f"kernel file not found: {args.kernel}")
        platform = load_platform(args.platform)
        settings = platform_settings(platform.name, args.settings_overrides)
        if args.judge is not None:
            args.judge.check()  # a wrong path is a usage error, before the harness runs
    except (UsageError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    from kernelevolve.eval.local import HarnessError
    from kernelevolve.specs.loading import resolve_spec

    try:
        config = {
            "kernelbench": {"path": args.kernelbench_path, "cpu_budget_elements": args.cpu_budget_elements}
        }
        spec = resolve_spec(args.spec, platform, config)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        result = verify(
            args.kernel.read_text(),
            spec,
            platform,
            settings,
            backend=args.backend,
            devices=list(args.devices) if args.devices else None,
            workers_per_device=args.workers_per_device,
            judge=args.judge,
        )
    except HarnessError as exc:
        print(f"error: the harness could not evaluate the kernel: {exc}", file=sys.stderr)
        return 1
    print(format_result(result, spec, platform, str(args.kernel)))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
