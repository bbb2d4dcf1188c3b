"""Turn a user's spec argument into a validated KernelSpec.

A spec argument is one of:
  * a shipped spec name (``softmax`` -> operators/spec/softmax.yaml),
  * a path to a spec YAML file (``op.yaml``, relative to the current folder, or absolute),
  * ``SOURCE:ARGUMENT``, asked of a spec source plug-in (`sources.py`): with the bench installed, a
    KernelBench problem (``kernelbench:1/19`` or ``kb:L1/19``) read from the configured
    ``kernelbench.path``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kernelevolve.paths import SPEC_DIR
from kernelevolve.platforms import Platform
from kernelevolve.specs.built_dtype import DEFAULT_TOLERANCE, built_dtype
from kernelevolve.specs.precision import REFERENCE_PRECISIONS
from kernelevolve.specs.reference import MODES
from kernelevolve.specs.shape_ranges import ShapeRangeError, expand_entry
from kernelevolve.specs.sources import from_source, split_source
from kernelevolve.types import DEFAULT_INPUT_DISTRIBUTIONS, Backward, KernelSpec, ShapeCase

if TYPE_CHECKING:
    from kernelevolve.specs.spec_file import BackwardFields

log = logging.getLogger(__name__)


class SpecError(ValueError):
    """A spec that cannot be used; the message says what to fix."""


def shipped_spec_names() -> list[str]:
    return sorted(p.stem for p in SPEC_DIR.glob("*.yaml"))


def resolve_spec(
    spec_arg: str,
    platform: Platform,
    config: Mapping[str, Any] | None = None,
    *,
    validate: bool = True,
) -> KernelSpec:
    """Load, adapt to the platform, and validate the spec named by ``spec_arg``. `config` is the run's
    config, whose sections spec sources read (``kernelbench.path`` for ``kernelbench:1/19``)."""
    spec_arg = str(spec_arg).strip()
    if not spec_arg:
        raise SpecError("no spec given: pass +spec=<shipped name | path/to/op.yaml | kernelbench:LEVEL/ID>")
    source = split_source(spec_arg)
    if source is not None and not Path(spec_arg).expanduser().is_file():
        try:
            spec = from_source(*source, platform, config or {})
        except ValueError as exc:  # no such source, one not installed, or an argument it cannot use
            raise SpecError(f"{spec_arg!r}: {exc}") from None
    else:
        spec = load_spec_file(_locate_spec_file(spec_arg), platform)
    if validate:
        validate_reference(spec)
    return spec


def _locate_spec_file(spec_arg: str) -> Path:
    candidate = Path(spec_arg).expanduser()
    if candidate.is_file():
        return candidate
    shipped = SPEC_DIR / f"{spec_arg}.yaml"
    if "/" not in spec_arg and shipped.is_file():
        return shipped
    names = ", ".join(shipped_spec_names())
    if candidate.suffix in (".yaml", ".yml") or "/" in spec_arg:
        raise SpecError(f"spec file not found: {candidate.resolve()} (shipped specs: {names})")
    raise SpecError(f"unknown spec {spec_arg!r}: not a file and not a shipped spec ({names})")


def load_spec_file(path: Path, platform: Platform) -> KernelSpec:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: malformed YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise SpecError(f"{path}: a spec must be a YAML mapping, got {type(data).__name__}")
    return spec_from_mapping(data, base_dir=path.parent, origin=f"file:{path}", platform=platform)


def spec_from_mapping(
    data: Mapping[str, Any], *, base_dir: Path, origin: str, platform: Platform
) -> KernelSpec:
    """A spec file's mapping as a KernelSpec: its fields checked (spec_file.py), then what follows from
    them: the reference's source, the platform's shapes, the dtype (the reference's own where the file
    names none) and that dtype's tolerance where the file gives none."""
    from kernelevolve.specs.spec_file import SpecFileError, parse_spec_file  # pydantic: spec files only

    try:
        fields = parse_spec_file(data)
    except SpecFileError as exc:
        raise SpecError(f"{origin}: {exc}") from None
    source, reference_path = _reference_source(fields.reference, fields.reference_code, base_dir, origin)
    shapes_key = "cpu_shapes" if platform.device == "cpu" and fields.cpu_shapes else "shapes"
    shapes = _parse_shapes(getattr(fields, shapes_key), origin, shapes_key)
    # Without a `dtype`, the one the reference builds its inputs in: a half-precision problem stays one.
    dtype = fields.dtype or built_dtype(source, shapes[0].params)
    return KernelSpec(
        name=fields.name,
        reference_source=source,
        dtype=dtype,
        atol=DEFAULT_TOLERANCE[dtype] if fields.atol is None else fields.atol,
        rtol=DEFAULT_TOLERANCE[dtype] if fields.rtol is None else fields.rtol,
        shapes=shapes,
        backends=tuple(fields.backends or fields.targets or ("triton",)),
        tags=tuple(fields.tags),
        origin=origin,
        reference_path=reference_path,
        description=fields.description or "",
        input_distributions=fields.input_distributions or DEFAULT_INPUT_DISTRIBUTIONS,
        mode=fields.mode or MODES[0],
        reference_precision=fields.reference_precision or REFERENCE_PRECISIONS[0],
        backward=_backward(fields.backward),
    )


def _reference_source(
    reference: str | None, reference_code: str | None, base_dir: Path, origin: str
) -> tuple[str, str | None]:
    """The reference's source, and its resolved path where the spec names a file (spec_file.py checks
    that exactly one of the two is given)."""
    if reference is None:
        return str(reference_code), None
    path = (base_dir / reference).resolve()
    if not path.is_file():
        raise SpecError(f"{origin}: reference file not found: {path}")
    return path.read_text(), str(path)


def _backward(fields: BackwardFields | None) -> Backward | None:
    """The spec's `backward` (spec_file.py): absent or false, a forward spec; true, every floating input
    and every parameter need gradients; a mapping names them (`inputs`, `parameters`)."""
    if fields is None:
        return None
    inputs, parameters = fields.inputs, fields.parameters
    return Backward(
        inputs=None if inputs == "all" else tuple(inputs),
        parameters=None if parameters == "all" else () if parameters == "none" else tuple(parameters),
    )


def _parse_shapes(raw: list[dict[str, Any]] | None, origin: str, key: str) -> tuple[ShapeCase, ...]:
    """The shape cases of a `shapes` list (checked by spec_file.py), ranges expanded (shape_ranges.py)."""
    if raw is None:
        return (ShapeCase("default"),)
    shapes = []
    for index, entry in enumerate(raw):
        params = {str(k): v for k, v in entry.items() if k != "name"}
        try:  # a constant given as a range or list of sizes stands for several cases (shape_ranges.py)
            cases = expand_entry(str(entry.get("name", f"shape{index}")), params)
        except ShapeRangeError as exc:
            raise SpecError(f"{origin}: {key}[{index}]: {exc}") from None
        shapes += [ShapeCase(name, plain, bucket) for name, plain, bucket in cases]
    names = [s.name for s in shapes]
    if len(set(names)) != len(names):
        raise SpecError(f"{origin}: {key}: shape names must be unique, got {names}")
    return tuple(shapes)


def validate_reference(spec: KernelSpec) -> None:
    """Run the reference symbolically (meta tensors) at every shape; real CPU run as a fallback."""
    from kernelevolve.specs.reference_check import check_reference

    problem = check_reference(spec)
    if problem is None and spec.backward is not None:
        from kernelevolve.specs.training import backward_problem

        problem = backward_problem(spec)
    if problem:
        raise SpecError(f"{spec.origin}: {problem}")
