"""Dump the code torch.compile (Inductor) generates for KernelBench references on this GPU.

    python experiments/inductor_dump/run.py --kernelbench .kbdata/problems.jsonl --problems 1/22,2/70 --out DIR

For each problem: the reference at KernelBench's sizes on cuda:0, compiled with torch.compile (default
mode), run once through `torch._inductor.utils.run_and_get_code`; every generated module is written to
DIR/L<level>_<id>_<k>.py with a header naming the problem, torch and triton versions and the device.
These are the inputs the compiler-seed operator turns into standalone candidates; kept as test fixtures
so its transformation is tested on CPU against real GPU output.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernelbench", type=Path, required=True)
    parser.add_argument("--problems", required=True, help="comma-separated level/id")
    parser.add_argument("--out", type=Path, required=True)
    cli = parser.parse_args()

    import torch
    import triton
    from torch._inductor.utils import run_and_get_code

    from kernelevolve.specs.reference import build_model, load_reference, make_inputs
    from kernelevolve.bench.kernelbench.problems import load_problem

    cli.out.mkdir(parents=True, exist_ok=True)
    device = torch.cuda.get_device_name(0)
    for item in cli.problems.split(","):
        level, problem_id = (int(v) for v in item.split("/"))
        started = time.perf_counter()
        try:
            problem = load_problem(cli.kernelbench, level, problem_id)
            module = load_reference(problem.code)
            model = build_model(module.Model, module, 0, "cuda", torch.float32)
            inputs = make_inputs(module, 0, "cuda", torch.float32, on_device=True)
            torch._dynamo.reset()
            with torch.no_grad():
                _, codes = run_and_get_code(torch.compile(model), *inputs)
        except Exception:
            print(f"L{level}/{problem_id}: failed\n{traceback.format_exc()[-1500:]}", flush=True)
            continue
        for k, code in enumerate(codes):
            header = (
                f"# Inductor output for KernelBench L{level}/{problem_id} {problem.name}\n"
                f"# torch {torch.__version__}, triton {triton.__version__}, {device}, torch.compile default mode\n"
            )
            (cli.out / f"L{level}_{problem_id}_{k}.py").write_text(header + code)
        print(
            f"L{level}/{problem_id} {problem.name}: {len(codes)} module(s), {time.perf_counter() - started:.1f} s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
