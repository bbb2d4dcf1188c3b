"""Build hook only (the project's metadata is pyproject.toml): a wheel carries the shipped data.

conf/, operators/, platforms/ and knowledge_base/ live at the repository root, where a source checkout
reads them; build_py copies them into the package as kernelevolve/_shipped/, where an installed wheel
reads them through importlib.resources (kernelevolve/paths.py). An editable install copies nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("conf", "operators", "platforms", "knowledge_base")  # kernelevolve.paths.SHIPPED


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "kernelevolve" / "_shipped"
        shutil.rmtree(target, ignore_errors=True)  # nothing left from an earlier build
        for name in SHIPPED:
            shutil.copytree(
                ROOT / name,
                target / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )


setup(cmdclass={"build_py": BuildPyWithData})
