"""The user's KernelBench checkout: the folder that holds its `kernelbench` package, and its commit."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

_EVAL = Path("kernelbench") / "eval.py"


def kernelbench_src(path: str | Path) -> Path:
    """The folder to put on sys.path for `import kernelbench.eval`: `path` itself, its `src` (a checkout's
    root) or its parent (the package folder). Raises FileNotFoundError naming what was looked for."""
    root = Path(path).expanduser().resolve()
    for candidate in (root, root / "src", root.parent):
        if (candidate / _EVAL).is_file():
            return candidate
    raise FileNotFoundError(
        f"no KernelBench evaluator at {path}: expected a checkout (with src/{_EVAL}) or its src folder "
        f"(with {_EVAL})"
    )


@functools.lru_cache(maxsize=8)
def kernelbench_commit(src: Path) -> str | None:
    """The checkout's git commit; None where it is not a git repository of its own (an export, a pip
    install, or a copy inside another project's repository, whose commit would say nothing about it)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None
    top, commit = Path(lines[0]).resolve(), lines[1]
    return commit if top in (src.resolve(), src.resolve().parent) else None
