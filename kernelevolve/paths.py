"""Where the project's shipped data lives (operators/, platforms/, knowledge_base/, conf/).

In a source checkout (an editable install) they are the repository's folders. A built wheel carries
copies inside the package, at kernelevolve/_shipped/ (setup.py puts them there), found through
importlib.resources. KERNELEVOLVE_HOME, where set, names another folder holding all four.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

SHIPPED = ("conf", "operators", "platforms", "knowledge_base")  # the folders a wheel carries


def _data_root() -> Path:
    if os.environ.get("KERNELEVOLVE_HOME"):
        return Path(os.environ["KERNELEVOLVE_HOME"])
    packaged = resources.files("kernelevolve") / "_shipped"
    if packaged.is_dir():  # an installed wheel (unpacked on disk, as pip installs it)
        return Path(str(packaged))
    return Path(__file__).resolve().parents[1]  # the repository


PROJECT_ROOT = _data_root()
OPERATORS_DIR = PROJECT_ROOT / "operators"
SPEC_DIR = OPERATORS_DIR / "spec"
PLATFORMS_DIR = PROJECT_ROOT / "platforms"
KNOWLEDGE_BASE_DIR = PROJECT_ROOT / "knowledge_base"
CONF_DIR = PROJECT_ROOT / "conf"  # composes with kernelevolve.config imported (its schema)


def cache_dir() -> Path:
    """User cache for baselines, compiled artefacts and the KB index (never committed)."""
    root = os.environ.get("KERNELEVOLVE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kernelevolve"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path
