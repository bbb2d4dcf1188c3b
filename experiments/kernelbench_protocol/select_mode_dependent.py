"""The KernelBench problems whose result depends on the module's mode (issue 36's re-run set): those whose
reference, built as KernelBench builds it and called once on meta tensors, dispatches a batch or instance
norm that uses running statistics, or a dropout. Found from the traced program (the ops and the modules'
flags), not from names or source text.

Usage: python experiments/kernelbench_protocol/select_mode_dependent.py PROBLEMS_JSONL > mode_dependent.md
"""

from __future__ import annotations

import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelevolve.bench.kernelbench.problems import list_problems
from kernelevolve.specs.reference_module import load_reference_module

_MODE_OPS = ("batch_norm", "instance_norm", "dropout", "bernoulli", "native_dropout")


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.names.add(func.__name__)
        return func(*args, **(kwargs or {}))


def mode_dependent_ops(code: str) -> list[str]:
    """The mode-dependent ops the reference's forward dispatches, built in training mode on meta."""
    module = load_reference_module(code)
    with torch.device("meta"):
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
    model.train()
    ops = _Ops()
    with ops, torch.no_grad():
        model(*inputs)
    found = sorted(n for n in ops.names if any(tag in n for tag in _MODE_OPS))
    # a norm with running statistics changes with the mode; InstanceNorm's default keeps none
    tracked = any(getattr(m, "track_running_stats", False) for m in model.modules())
    dropout = any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules())
    if not tracked and not dropout and not any("dropout" in n or "bernoulli" in n for n in found):
        return []
    return found


def main(path: str) -> None:
    print("# KernelBench problems whose result depends on the module's mode\n")
    print("From `select_mode_dependent.py` (the traced ops of each reference built in training mode on meta")
    print("tensors): batch or instance norm with running statistics, or dropout.\n")
    for problem in list_problems(path):
        try:
            ops = mode_dependent_ops(problem.code)
        except Exception as exc:  # noqa: BLE001 - a reference meta tensors cannot run: listed for a look
            print(f"<!-- L{problem.level}/{problem.problem_id} not traced: {type(exc).__name__} -->")
            continue
        if ops:
            print(f"- L{problem.level}/{problem.problem_id} {problem.name} ({', '.join(ops)})")


if __name__ == "__main__":
    main(sys.argv[1])
