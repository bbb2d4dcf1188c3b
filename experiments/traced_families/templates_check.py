"""Templates per spec, dumped or compared against an earlier dump: every shipped spec (at the CPU's and the
H200's shapes), every KernelBench problem (as built for a GPU, and scaled for the CPU), and the two modules of
the transformer example as `kernelevolve.optimize` turns them into specs.

    python experiments/traced_families/templates_check.py dump PROBLEMS_JSONL OUT.json
    python experiments/traced_families/templates_check.py compare PROBLEMS_JSONL BEFORE.json [--untagged]

`compare` exits 1 when a spec lost a template it had in BEFORE (after must be a superset), and lists the
specs that gained some. `--untagged` matches each spec with its tags removed and a neutral name: what the
traced program alone gives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # for examples.transformer_block

from kernelevolve.types import KernelSpec  # noqa: E402

BACKENDS = ("triton", "cute")


def _specs(problems: str) -> dict[str, KernelSpec]:
    import torch

    from examples.transformer_block.model import RMSNorm, SwiGLU
    from kernelevolve import kernelbench
    from kernelevolve.specs.module_spec import module_spec
    from kernelevolve.paths import SPEC_DIR
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import load_spec_file, shipped_spec_names

    specs: dict[str, KernelSpec] = {}
    for platform in ("cpu", "h200"):
        for name in shipped_spec_names():
            specs[f"shipped:{name}@{platform}"] = load_spec_file(
                SPEC_DIR / f"{name}.yaml", load_platform(platform)
            )
    for problem in kernelbench.list_problems(problems):
        spec = kernelbench.problem_to_spec(problem)
        key = f"kb:L{problem.level}/{problem.problem_id}"
        specs[f"{key}@gpu"] = spec
        specs[f"{key}@cpu"] = kernelbench.scale_for_cpu(spec, 1 << 16)
    torch.manual_seed(0)
    specs["example:RMSNorm"] = module_spec(RMSNorm(64), torch.randn(6, 64))
    specs["example:SwiGLU"] = module_spec(SwiGLU(), torch.randn(6, 96))
    return specs


def templates_per_spec(problems: str, untagged: bool = False) -> dict[str, list[str]]:
    from dataclasses import replace

    from kernelevolve.variation.template_library import templates_for

    specs = _specs(problems)
    if untagged:
        specs = {key: replace(spec, name="op", tags=()) for key, spec in specs.items()}
    return {
        key: sorted(f"{t.backend}/{t.name}" for backend in BACKENDS for t in templates_for(spec, backend))
        for key, spec in specs.items()
    }


def compare(before: dict[str, list[str]], after: dict[str, list[str]]) -> int:
    lost = {k: sorted(set(v) - set(after.get(k, []))) for k, v in before.items()}
    lost = {k: v for k, v in lost.items() if v}
    gained = {k: sorted(set(after[k]) - set(before.get(k, []))) for k in after}
    gained = {k: v for k, v in gained.items() if v}
    served = [k for k, v in after.items() if v]
    print(
        f"specs: {len(after)} ({len(before)} before); with a template: {len(served)} "
        f"({sum(1 for v in before.values() if v)} before)"
    )
    print(f"spec-template pairs: {sum(map(len, after.values()))} ({sum(map(len, before.values()))} before)")
    print(f"lost: {len(lost)} spec(s)")
    for key, names in sorted(lost.items()):
        print(f"  LOST {key}: {', '.join(names)}")
    print(f"gained: {len(gained)} spec(s)")
    for key, names in sorted(gained.items()):
        print(f"  + {key}: {', '.join(names)}")
    return 1 if lost else 0


def main(argv: list[str]) -> int:
    mode, problems, path = argv[:3]
    if mode == "dump":
        Path(path).write_text(json.dumps(templates_per_spec(problems), indent=1, sort_keys=True) + "\n")
        return 0
    before = json.loads(Path(path).read_text())
    return compare(before, templates_per_spec(problems, untagged="--untagged" in argv[3:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
