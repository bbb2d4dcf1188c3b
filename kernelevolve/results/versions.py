"""The versions a run ran with (kept in results.json, shown in reports): kernelevolve, Python, the OS,
and the installed torch, triton, CUTLASS DSL, Ray and openai, read from package metadata without
importing them."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

PACKAGES = ("torch", "triton", "nvidia-cutlass-dsl", "ray", "openai")


def versions() -> dict[str, str]:
    """Package -> version for what is installed (absent packages are left out)."""
    from kernelevolve import __version__

    out = {
        "kernelevolve": __version__,
        "python": sys.version.split()[0],
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
    }
    for package in PACKAGES:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return out
