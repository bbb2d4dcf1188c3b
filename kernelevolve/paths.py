"""Where the project's shipped data lives (operators/, platforms/, knowledge_base/, conf/)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(os.environ.get("KERNELEVOLVE_HOME", Path(__file__).resolve().parents[1]))
OPERATORS_DIR = PROJECT_ROOT / "operators"
SPEC_DIR = OPERATORS_DIR / "spec"
PLATFORMS_DIR = PROJECT_ROOT / "platforms"
KNOWLEDGE_BASE_DIR = PROJECT_ROOT / "knowledge_base"
CONF_DIR = PROJECT_ROOT / "conf"


def cache_dir() -> Path:
    """User cache for baselines, compiled artefacts and the KB index (never committed)."""
    root = os.environ.get("KERNELEVOLVE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kernelevolve"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path
