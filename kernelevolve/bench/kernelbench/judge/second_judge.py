"""KernelBench's evaluator as verify's second judge (`kernelbench.judge=PATH`; entry point group
`kernelevolve.judges`, name `kernelbench`)."""

from __future__ import annotations

from dataclasses import dataclass

from kernelevolve.bench.kernelbench.judge.checkout import kernelbench_src
from kernelevolve.bench.kernelbench.judge.process import judge_kernel
from kernelevolve.bench.kernelbench.judge.values import (
    JudgeSettings,
    KernelBenchVerdict,
    kernelbench_precision,
)
from kernelevolve.types import KernelSpec


@dataclass(frozen=True)
class KernelBenchJudge:
    settings: JudgeSettings

    def check(self) -> None:
        """A wrong checkout path raises (FileNotFoundError / ValueError): a usage error, before our harness runs."""
        kernelbench_src(self.settings.path)

    def judge(self, source: str, spec: KernelSpec, backend: str, device: str) -> KernelBenchVerdict:
        return judge_kernel(
            source,
            spec.reference_source,
            self.settings,
            backend=backend,
            device=device,
            precision=kernelbench_precision(spec.dtype),
            name=spec.name,
        )


def second_judge(path: str, timeout_s: float = 600.0) -> KernelBenchJudge:
    """The factory verify calls with `kernelbench.judge` and `kernelbench.judge_timeout_s`."""
    return KernelBenchJudge(JudgeSettings(path, timeout_s))
