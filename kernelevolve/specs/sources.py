"""Spec sources: plug-ins that make `NAME:ARGUMENT` spec arguments into specs.

A benchmark suite is a spec source: `+spec=kernelbench:1/19` asks the source `kernelbench` for its
problem 1/19. The core ships none. A source is a callable `(argument, platform, config) -> KernelSpec`,
where `config` is the run's config (a source reads its own section, e.g. `kernelbench.path`); it
raises ValueError (SpecError) for an argument or config it cannot use. Sources register in
`SPEC_SOURCES`, or from an installed package under the entry point group `kernelevolve.spec_sources`
(name = the prefix), imported only when a spec argument names them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kernelevolve.platforms import Platform
from kernelevolve.registry import PluginUnavailableError, Registry
from kernelevolve.types import KernelSpec

ENTRY_POINT_GROUP = "kernelevolve.spec_sources"
SPEC_SOURCES: Registry[KernelSpec] = Registry("spec source", group=ENTRY_POINT_GROUP)
_SOURCE_ARG = re.compile(r"^([A-Za-z][\w-]*):(.*)$")


def split_source(spec_arg: str) -> tuple[str, str] | None:
    """("kernelbench", "1/19") for "kernelbench:1/19"; None for an argument without a `NAME:` prefix."""
    match = _SOURCE_ARG.match(spec_arg)
    return (match.group(1).lower(), match.group(2)) if match else None


def from_source(name: str, argument: str, platform: Platform, config: Mapping[str, Any]) -> KernelSpec:
    """The spec source `name`'s spec for `argument`; ValueError, one line, where there is no such source
    or its module is not installed."""
    if name not in SPEC_SOURCES.names():
        installed = ", ".join(SPEC_SOURCES.names()) or "none"
        raise ValueError(f"no spec source {name!r} is installed (spec sources: {installed})")
    try:
        source = SPEC_SOURCES.get(name)
    except PluginUnavailableError as exc:
        raise ValueError(str(exc)) from None
    spec: KernelSpec = source(argument, platform, config)
    return spec
