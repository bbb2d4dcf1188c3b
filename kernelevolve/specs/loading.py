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
from typing import Any

import yaml

from kernelevolve.paths import SPEC_DIR
from kernelevolve.platforms import Platform
from kernelevolve.specs.built_dtype import DEFAULT_TOLERANCE, DTYPES, built_dtype
from kernelevolve.specs.input_distributions import validate_distribution_names
from kernelevolve.specs.precision import REFERENCE_PRECISIONS
from kernelevolve.specs.reference import MODES
from kernelevolve.specs.shape_ranges import ShapeRangeError, expand_entry
from kernelevolve.specs.sources import from_source, split_source
from kernelevolve.types import DEFAULT_INPUT_DISTRIBUTIONS, Backward, KernelSpec, ShapeCase

log = logging.getLogger(__name__)

ALLOWED_KEYS = {
    "name",
    "description",
    "reference",
    "reference_code",
    "dtype",
    "atol",
    "rtol",
    "backends",
    "targets",  # alias of backends
    "tags",
    "shapes",
    "cpu_shapes",
    "input_distributions",  # winners' final checks: a list of names from specs/input_distributions.py
    "mode",  # as_built (default), eval or train: the mode the models run in
    "reference_precision",  # exact_fp32 (default) or framework_default (KernelBench's protocol)
    "backward",  # a training spec: true, or {inputs: [0] | all, parameters: [weight] | all | none}
}
KNOWN_BACKENDS = ("triton", "cute")


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
    unknown = sorted(set(data) - ALLOWED_KEYS)
    if unknown:
        raise SpecError(f"{origin}: unknown key(s) {unknown}; allowed: {sorted(ALLOWED_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{origin}: 'name' (a non-empty string) is required")
    source, reference_path = _reference_source(data, base_dir, origin)
    shapes_key = "cpu_shapes" if platform.device == "cpu" and data.get("cpu_shapes") else "shapes"
    shapes = _parse_shapes(data.get(shapes_key), origin, shapes_key)
    # Without a `dtype`, the one the reference builds its inputs in: a half-precision problem stays one.
    dtype = str(data["dtype"]) if "dtype" in data else built_dtype(source, shapes[0].params)
    if dtype not in DTYPES:
        raise SpecError(f"{origin}: dtype {dtype!r} not in {DTYPES}")
    backends = tuple(data.get("backends") or data.get("targets") or ("triton",))
    bad = [b for b in backends if b not in KNOWN_BACKENDS]
    if bad:
        raise SpecError(f"{origin}: unknown backend(s) {bad}; valid: {list(KNOWN_BACKENDS)}")
    return KernelSpec(
        name=name,
        reference_source=source,
        dtype=dtype,
        atol=_tolerance(data, "atol", dtype, origin),
        rtol=_tolerance(data, "rtol", dtype, origin),
        shapes=shapes,
        backends=backends,
        tags=tuple(str(t) for t in data.get("tags") or ()),
        origin=origin,
        reference_path=reference_path,
        description=str(data.get("description", "")),
        input_distributions=_input_distributions(data.get("input_distributions"), origin),
        mode=_one_of(data, "mode", MODES, origin),
        reference_precision=_one_of(data, "reference_precision", REFERENCE_PRECISIONS, origin),
        backward=_backward(data.get("backward"), origin),
    )


def _reference_source(data: Mapping[str, Any], base_dir: Path, origin: str) -> tuple[str, str | None]:
    if "reference" in data and "reference_code" in data:
        raise SpecError(f"{origin}: give either 'reference' (a path) or 'reference_code' (inline), not both")
    if "reference_code" in data:
        return str(data["reference_code"]), None
    if "reference" not in data:
        raise SpecError(
            f"{origin}: 'reference' (path to a module with Model, get_inputs, get_init_inputs) is required"
        )
    path = (base_dir / str(data["reference"])).resolve()
    if not path.is_file():
        raise SpecError(f"{origin}: reference file not found: {path}")
    return path.read_text(), str(path)


def _tolerance(data: Mapping[str, Any], key: str, dtype: str, origin: str) -> float:
    value = data.get(key, DEFAULT_TOLERANCE[dtype])
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{origin}: {key} must be a number, got {value!r}") from None
    if not tolerance >= 0:
        raise SpecError(f"{origin}: {key} must be >= 0, got {tolerance}")
    return tolerance


def _one_of(data: Mapping[str, Any], key: str, choices: tuple[str, ...], origin: str) -> str:
    """The spec's `key`, one of `choices` (the first where the key is absent)."""
    raw = data.get(key)
    value = choices[0] if raw is None else str(raw)
    if value not in choices:
        raise SpecError(f"{origin}: {key} {raw!r} not in {list(choices)}")
    return value


def _backward(raw: Any, origin: str) -> Backward | None:
    """The spec's `backward`: absent or false (a forward spec), true (every floating input and every
    parameter need gradients), or a mapping naming them: `inputs` (positions in get_inputs(), or `all`)
    and `parameters` (names, `all` or `none`)."""
    if raw is None or raw is False:
        return None
    if raw is True:
        return Backward()
    if not isinstance(raw, Mapping) or set(raw) - {"inputs", "parameters"}:
        raise SpecError(
            f"{origin}: 'backward' must be true or a mapping with keys inputs, parameters; got {raw!r}"
        )
    inputs, parameters = raw.get("inputs", "all"), raw.get("parameters", "all")
    if inputs != "all" and not (
        isinstance(inputs, list)
        and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in inputs)
    ):
        raise SpecError(
            f"{origin}: backward.inputs must be 'all' or a list of input positions, got {inputs!r}"
        )
    if parameters not in ("all", "none") and not (
        isinstance(parameters, list) and all(isinstance(p, str) and p for p in parameters)
    ):
        raise SpecError(
            f"{origin}: backward.parameters must be 'all', 'none' or a list of names, got {parameters!r}"
        )
    return Backward(
        inputs=None if inputs == "all" else tuple(inputs),
        parameters=None if parameters == "all" else () if parameters == "none" else tuple(parameters),
    )


def _input_distributions(raw: Any, origin: str) -> tuple[str, ...]:
    """The spec's `input_distributions`: a name or a list of names ("normal" is always checked, so
    ``[normal]`` opts out of the others); the default where the key is absent."""
    if raw is None:
        return DEFAULT_INPUT_DISTRIBUTIONS
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list):
        raise SpecError(f"{origin}: 'input_distributions' must be a list of names, got {raw!r}")
    try:
        return validate_distribution_names(names)
    except ValueError as exc:
        raise SpecError(f"{origin}: input_distributions: {exc}") from None


def _parse_shapes(raw: Any, origin: str, key: str) -> tuple[ShapeCase, ...]:
    if raw is None:
        return (ShapeCase("default"),)
    if not isinstance(raw, list) or not raw:
        raise SpecError(
            f"{origin}: '{key}' must be a non-empty list of mappings like {{name: s1, batch_size: 8}}"
        )
    shapes = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            raise SpecError(f"{origin}: {key}[{index}] must be a mapping, got {entry!r}")
        params = {str(k): v for k, v in entry.items() if k != "name"}
        try:  # a constant given as a range or list of sizes stands for several cases (shape_ranges.py)
            cases = expand_entry(str(entry.get("name", f"shape{index}")), params)
        except ShapeRangeError as exc:
            raise SpecError(f"{origin}: {key}[{index}]: {exc}") from None
        shapes += [ShapeCase(name, plain, bucket) for name, plain, bucket in cases]
    names = [s.name for s in shapes]
    if len(set(names)) != len(names):
        raise SpecError(f"{origin}: shape names must be unique, got {names}")
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
