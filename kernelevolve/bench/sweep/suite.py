"""The shipped specs (operators/spec/) as a sweep's problems: `--specs all` or `--specs rope,swiglu`.

They are level 0 of the sweep, numbered 1.. in the order of the sorted names of every shipped spec (so a
spec keeps its number, and its record `results/L0_NNN.json`, whichever subset a call names; a spec added
later renumbers those after it: sweep a changed suite into a new folder). Each runs by its name as the
spec argument, exactly as `python -m kernelevolve +spec=NAME` would.
"""

from __future__ import annotations

from collections.abc import Iterable

from kernelevolve.bench.kernelbench.problems import Problem
from kernelevolve.bench.sweep.run import SweepError
from kernelevolve.paths import SPEC_DIR

SUITE_LEVEL = 0


def suite_names() -> list[str]:
    return sorted(path.stem for path in SPEC_DIR.glob("*.yaml"))


def suite_problems(selection: Iterable[str]) -> list[Problem]:
    """The named shipped specs ("all": every one) as problems, in the suite's order."""
    names = suite_names()
    wanted = {n.strip() for item in selection for n in item.split(",") if n.strip()}
    if "all" in wanted:
        wanted = set(names)
    unknown = sorted(wanted - set(names))
    if unknown:
        raise SweepError(f"--specs: not shipped specs: {unknown} (shipped: {', '.join(names)})")
    return [
        Problem(SUITE_LEVEL, number, name, (SPEC_DIR / f"{name}.yaml").read_text(), spec=name)
        for number, name in enumerate(names, start=1)
        if name in wanted
    ]
