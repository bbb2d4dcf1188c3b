"""The coarse KernelBench tags (gemm, conv, normalization, ...) from problem names, as `kernelbench._TAG_RULES`
gave them up to 859ec2c, against `traced_tags` from the traced program, per tag over all problems.

    python experiments/traced_families/tags_check.py PROBLEMS_JSONL
"""

from __future__ import annotations

import sys
from collections import Counter

from kernelevolve.bench.kernelbench.problems import list_problems
from kernelevolve.specs.traced_tags import RULES, traced_tags

NAME_RULES = (  # kernelbench._TAG_RULES as it was
    ("matmul", "gemm"), ("matrix_multiplication", "gemm"), ("gemm", "gemm"), ("conv", "conv"),
    ("norm", "normalization"), ("pool", "pooling"), ("reduction", "reduction"), ("attention", "attention"),
    ("loss", "loss"), ("cumsum", "scan"), ("cumprod", "scan"), ("argmax", "argreduce"), ("argmin", "argreduce"),
)  # fmt: skip


def main(path: str) -> None:
    both: Counter[str] = Counter()
    named_only: dict[str, list[str]] = {tag: [] for tag in RULES}
    traced_only: dict[str, list[str]] = {tag: [] for tag in RULES}
    problems = list_problems(path)
    for problem in problems:
        named = {tag for needle, tag in NAME_RULES if needle in problem.name.lower()}
        traced = set(traced_tags(problem.code))
        key = f"L{problem.level}/{problem.problem_id}"
        for tag in RULES:
            if tag in named and tag in traced:
                both[tag] += 1
            elif tag in named:
                named_only[tag].append(f"{key} {problem.name}")
            elif tag in traced:
                traced_only[tag].append(key)
    print(f"{len(problems)} problems; per tag: both, by name only, traced only")
    for tag in RULES:
        print(f"{tag:14s} {both[tag]:4d} {len(named_only[tag]):4d} {len(traced_only[tag]):4d}")
        for entry in named_only[tag]:
            print(f"    name only: {entry}")


if __name__ == "__main__":
    main(sys.argv[1])
