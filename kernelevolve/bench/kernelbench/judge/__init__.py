"""KernelBench's own evaluator as a second judge of our winners (docs/kernelbench_judge.md).

`judge_kernel` runs KernelBench's `eval_kernel_against_ref` and `measure_ref_program_time` on one kernel
in a process of its own (`child.py`), so neither its imports nor a crash there reach ours, and returns a
`KernelBenchVerdict`; a failure to judge is a verdict too. `winners.judge_run` judges a finished run's
winners for a sweep record; `agreement` sets a sweep's verdicts beside ours. Nothing here imports torch.
"""

from __future__ import annotations

from kernelevolve.bench.kernelbench.judge.checkout import kernelbench_commit, kernelbench_src
from kernelevolve.bench.kernelbench.judge.process import judge_kernel
from kernelevolve.bench.kernelbench.judge.values import JudgeRequest, JudgeSettings, KernelBenchVerdict

__all__ = [
    "JudgeRequest",
    "JudgeSettings",
    "KernelBenchVerdict",
    "judge_kernel",
    "kernelbench_commit",
    "kernelbench_src",
]
