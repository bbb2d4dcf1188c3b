"""What every kernel language (backend) provides to the harness and the operators."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from kernelevolve.types import StaticIssue, Status

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform


class Backend(Protocol):
    name: str
    runtime_package: str  # the import that candidates of this language need where they run

    def static_issues(self, source: str) -> list[StaticIssue]:
        """Backend-specific checks, e.g. the candidate really launches a kernel of this language."""
        ...

    def prepare_process(self, device: str) -> None:
        """Called in the evaluation child before any candidate import (e.g. TRITON_INTERPRET=1 on cpu)."""
        ...

    def load(self, source: str, module_name: str) -> ModuleType:
        """Execute the candidate source as a fresh module; raises on syntax/import errors."""
        ...

    def classify_error(self, exc: BaseException, stage: str) -> Status:
        """Map an exception raised while loading or running (stage: "load", "run") to a status."""
        ...

    def prompt_guidance(self, platform: Platform) -> str:
        """Short text for LLM prompts: idioms, pitfalls and the platform's features for this DSL."""
        ...
