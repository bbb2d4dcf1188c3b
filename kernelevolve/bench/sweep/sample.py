"""A fixed, stratified sample of KernelBench problems, chosen by a seeded rule that favours variety.

Rule: every problem gets an op family from its name (below). Per level, the families are shuffled
with `random.Random(seed)`, the problems inside each family too, and problems are then taken one
family at a time, round robin, until the level's quota is met, so no family gets a second problem
before every family has one. The sample is written as a markdown list that `--sample` reads back:
lines of the form `- L<level>/<id> <name> (<family>)`.

    python -m kernelevolve.bench.sweep.sample --kernelbench-path PATH --out experiments/sweep_sample.md
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Mapping
from pathlib import Path

from kernelevolve.bench.kernelbench.problems import Problem, list_problems

DEFAULT_QUOTA = {1: 10, 2: 10, 3: 5}
_SAMPLE_LINE = re.compile(r"^\s*[-*]\s+L(\d+)/(\d+)\b")

# (pattern on the lowered name, family); the first match wins.
_LEVEL1 = (
    (r"conv_transposed", "conv_transposed"),
    (r"conv", "conv"),
    (r"matrix_scalar", "elementwise"),
    (r"matmul|multiplication|gemm", "gemm"),
    (r"softmax", "softmax"),
    (r"norm", "normalization"),
    (r"pool", "pooling"),
    (r"cumsum|cumprod", "scan"),
    (r"loss", "loss"),
    (r"attention", "attention"),
    (r"reduction|argmax|argmin", "reduction"),
    (r"relu|sigmoid|tanh|swish|gelu|selu|elu|softplus|softsign", "activation"),
)
_LEVEL2_LEAD = (
    (r"^\d+_convtranspose3d", "convtranspose3d"),
    (r"^\d+_convtranspose2d", "convtranspose2d"),
    (r"^\d+_conv3d", "conv3d"),
    (r"^\d+_conv2d", "conv2d"),
    (r"^\d+_(gemm|matmul|bmm)", "gemm"),
)
# A level-2 fusion tail with any of these needs a reduction; otherwise it is pointwise only.
_LEVEL2_REDUCING = r"norm|softmax|logsumexp|mean|sum|max|min|pool"
_LEVEL3 = (
    (r"mlp", "mlp"),
    (r"rnn|lstm|gru", "recurrent"),
    (r"attention|transformer|gpt|swin|vision", "attention"),
    (r"mobilenet|efficientnet|squeezenet|shufflenet|regnet", "efficient_cnn"),
    (r"resnet|densenet", "residual_cnn"),
    (r"lenet|alexnet|vgg|googlenet|inception", "classic_cnn"),
)


def _first_match(name: str, rules: tuple[tuple[str, str], ...], default: str) -> str:
    for pattern, family in rules:
        if re.search(pattern, name):
            return family
    return default


def op_family(problem: Problem) -> str:
    name = problem.name.lower()
    if problem.level == 1:
        return _first_match(name, _LEVEL1, "other")
    if problem.level == 2:
        lead = _first_match(name, _LEVEL2_LEAD, "other")
        tail = name.split("_", 2)[-1]
        return f"{lead}+{'reduce' if re.search(_LEVEL2_REDUCING, tail) else 'pointwise'}"
    return _first_match(name, _LEVEL3, "other")


def stratified_sample(
    problems: list[Problem], quota: Mapping[int, int] = DEFAULT_QUOTA, seed: int = 0
) -> list[Problem]:
    rng = random.Random(seed)
    chosen: list[Problem] = []
    for level in sorted(quota):
        families: dict[str, list[Problem]] = {}
        for problem in sorted((p for p in problems if p.level == level), key=lambda p: p.problem_id):
            families.setdefault(op_family(problem), []).append(problem)
        order = sorted(families)
        rng.shuffle(order)
        for family in order:
            rng.shuffle(families[family])
        picked: list[Problem] = []
        while len(picked) < quota[level] and any(families.values()):
            for family in order:
                if families[family] and len(picked) < quota[level]:
                    picked.append(families[family].pop(0))
        chosen += sorted(picked, key=lambda p: p.problem_id)
    return chosen


def sample_markdown(sample: list[Problem], seed: int, source: str) -> str:
    lines = [
        "# KernelBench sample for sweeps",
        "",
        f"A fixed stratified sample: {len(sample)} problems from `{source}`, drawn with seed {seed} by",
        "`python -m kernelevolve.bench.sweep.sample` (module docstring: the rule). Each problem gets an op family",
        "from its name: level 1 by operator (gemm, conv, transposed conv, activation, elementwise, softmax,",
        "normalization, pooling, reduction, scan, loss, attention); level 2 by its leading op (conv2d, conv3d, transposed",
        "2-D/3-D conv, gemm/matmul) crossed with whether its fused tail reduces (norm, softmax, logsumexp,",
        "mean/sum/max/min, pool) or is pointwise only; level 3 by architecture (mlp, classic, residual and",
        "efficient CNNs, recurrent, attention). Families and the problems inside them are shuffled with",
        "`random.Random(seed)`; problems are taken one family at a time, round robin, until the level's",
        "quota is met, so no family gets a second problem before every family has one.",
        "",
        "`python -m kernelevolve.bench.sweep --sample experiments/sweep_sample.md ...` reads the `- L<level>/<id>` lines.",
    ]
    for level in sorted({p.level for p in sample}):
        rows = [p for p in sample if p.level == level]
        lines += ["", f"## Level {level} ({len(rows)})", ""]
        lines += [f"- L{p.level}/{p.problem_id} {p.name} ({op_family(p)})" for p in rows]
    return "\n".join(lines) + "\n"


def read_sample(path: Path) -> list[tuple[int, int]]:
    """(level, id) pairs of a sample file, in file order."""
    pairs = [
        (int(m.group(1)), int(m.group(2)))
        for m in (_SAMPLE_LINE.match(line) for line in Path(path).read_text().splitlines())
        if m
    ]
    if not pairs:
        raise ValueError(f"{path}: no '- L<level>/<id>' lines")
    return list(dict.fromkeys(pairs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelevolve.bench.sweep.sample", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--kernelbench-path", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quota", type=int, nargs=3, default=[10, 10, 5], metavar=("L1", "L2", "L3"))
    args = parser.parse_args(argv)
    quota = dict(zip((1, 2, 3), args.quota, strict=True))
    sample = stratified_sample(list_problems(args.kernelbench_path, (1, 2, 3)), quota, args.seed)
    args.out.write_text(sample_markdown(sample, args.seed, args.kernelbench_path.name))
    print(f"wrote {len(sample)} problems to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
