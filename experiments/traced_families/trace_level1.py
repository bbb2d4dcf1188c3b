"""What the dispatcher sees of each level-1 KernelBench problem that gets a family template today (by its
source form): its ops on meta tensors, built as KernelBench builds it, and the constructor arguments. The
evidence for matching templates on the traced program (issue 37).

Usage: python experiments/traced_families/trace_level1.py .kbdata/problems.jsonl > trace_level1.txt
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelevolve.bench.kernelbench.problems import list_problems, problem_tags
from kernelevolve.specs.reference_module import load_reference_module
from kernelevolve.specs.traced_families import FAMILIES


def _shown(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return f"T{tuple(value.shape)}"
    if isinstance(value, (list, tuple)):
        return [_shown(item) for item in value]
    return value


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, list[Any]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.ops.append((str(func), [_shown(a) for a in args[1:]]))
        return func(*args, **(kwargs or {}))


def main(path: str) -> None:
    families = {*FAMILIES, "sdpa"}
    for problem in list_problems(path, (1,)):
        tags = [t for t in problem_tags(problem) if t in families]
        if not tags:
            continue
        module = load_reference_module(problem.code)
        init = module.get_init_inputs()
        with torch.device("meta"):
            model, inputs = module.Model(*init), module.get_inputs()
        ops = _Ops()
        with ops, torch.no_grad():
            model(*inputs)
        print(
            problem.problem_id, tags, "init", init, [name for name, _ in ops.ops], [a for _, a in ops.ops][:3]
        )


if __name__ == "__main__":
    main(sys.argv[1])
