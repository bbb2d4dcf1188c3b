"""The fields of a spec file (op.yaml) as a pydantic model: their types, their choices, one-line errors.

`parse_spec_file` checks a spec file's mapping against `SpecFile` and returns it, or raises SpecFileError
with one line naming every field that is wrong, what is wrong with it and, where there is a fixed set, the
valid choices. What is not a field's type stays in loading.py: reading the reference, the dtype the
reference builds its inputs in where the file names none, the dtype's default tolerance, shape ranges.

pydantic is imported here only, and loading.py imports this module where it parses a spec file: a judge or
runner process, or a KernelBench problem's spec, never needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from kernelevolve.specs.built_dtype import DTYPES
from kernelevolve.specs.input_distributions import DISTRIBUTION_NAMES, validate_distribution_names
from kernelevolve.specs.precision import REFERENCE_PRECISIONS
from kernelevolve.specs.reference import MODES

KNOWN_BACKENDS = ("triton", "cute")

if TYPE_CHECKING:
    Dtype: TypeAlias = str
    Backend: TypeAlias = str
    Mode: TypeAlias = str
    Precision: TypeAlias = str
else:  # the choices are the tuples the rest of the package uses: one list of each
    Dtype, Backend = Literal[DTYPES], Literal[KNOWN_BACKENDS]
    Mode, Precision = Literal[MODES], Literal[REFERENCE_PRECISIONS]

# A field with a fixed set of values: the word for one value, and the values (its errors list them).
CHOICES = {
    "dtype": ("dtype", DTYPES),
    "backends": ("backend", KNOWN_BACKENDS),
    "targets": ("backend", KNOWN_BACKENDS),
    "mode": ("mode", MODES),
    "reference_precision": ("reference precision", REFERENCE_PRECISIONS),
    "input_distributions": ("input distribution", DISTRIBUTION_NAMES),
}
SHAPE = "a mapping like {name: s1, batch_size: 8}"
SHAPES = "a non-empty list of mappings like {name: s1, batch_size: 8}"
# What one item of a list field must be, for an error at a list position.
ITEMS = {"shapes": SHAPE, "cpu_shapes": SHAPE, "tags": "a string", "input_distributions": "a name"}
Tolerance = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Shapes = Annotated[list[dict[str, Any]], Field(min_length=1)]


class SpecFileError(ValueError):
    """A spec file's fields that do not fit `SpecFile`: one line, every problem named."""


class _Fields(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackwardFields(_Fields):
    """`backward` as a mapping: the inputs and parameters that need gradients (`true`: all of both)."""

    inputs: Literal["all"] | list[Annotated[StrictInt, Field(ge=0)]] = Field(
        "all", description="'all' or a list of input positions in get_inputs() (ints >= 0)"
    )
    parameters: Literal["all", "none"] | list[Annotated[StrictStr, Field(min_length=1)]] = Field(
        "all", description="'all', 'none' or a list of parameter names"
    )


class SpecFile(_Fields):
    """A spec file's keys; None where a key is absent (loading.py sets the defaults that depend on others)."""

    name: StrictStr = Field(min_length=1, description="a non-empty string")
    description: StrictStr | None = Field(None, description="a string")
    reference: StrictStr | None = Field(
        None, description="a path to a module with Model, get_inputs, get_init_inputs"
    )
    reference_code: StrictStr | None = Field(None, description="the reference module's source, inline")
    dtype: Dtype | None = None  # absent: the dtype the reference builds its inputs in
    atol: Tolerance | None = Field(None, description="a finite number >= 0")  # absent: the dtype's default
    rtol: Tolerance | None = Field(None, description="a finite number >= 0")
    backends: list[Backend] | None = Field(None, description="a list of kernel languages")
    targets: list[Backend] | None = Field(None, description="a list of kernel languages")  # alias
    tags: list[StrictStr] = Field([], description="a list of strings")
    shapes: Shapes | None = Field(None, description=SHAPES)
    cpu_shapes: Shapes | None = Field(None, description=SHAPES)
    # the winners' final checks (specs/input_distributions.py); "normal" is always checked
    input_distributions: tuple[StrictStr, ...] | None = Field(None, description="a name or a list of names")
    mode: Mode | None = None  # the mode the models run in; absent: as_built
    reference_precision: Precision | None = None  # absent: exact_fp32
    backward: BackwardFields | None = Field(
        None, description="true, false or a mapping with keys inputs, parameters"
    )

    @field_validator("input_distributions", mode="before")
    @classmethod
    def _one_name_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("input_distributions")
    @classmethod
    def _known_distributions(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else validate_distribution_names(value)

    @field_validator("backward", mode="before")
    @classmethod
    def _true_is_all(cls, value: Any) -> Any:
        return None if value is False else {} if value is True else value

    @model_validator(mode="after")
    def _one_reference(self) -> SpecFile:
        if self.reference is not None and self.reference_code is not None:
            raise ValueError(
                "reference, reference_code: give one, not both (a path, or the module's source inline)"
            )
        if self.reference is None and self.reference_code is None:
            raise ValueError(
                "reference: required: a path to a module with Model, get_inputs, get_init_inputs "
                "(or reference_code: its source, inline)"
            )
        return self


_MODELS: dict[str, type[BaseModel]] = {"": SpecFile, "backward": BackwardFields}
_FIELDS = {name: info for model in _MODELS.values() for name, info in model.model_fields.items()}


def parse_spec_file(data: Mapping[str, Any]) -> SpecFile:
    """`data` (a spec file's mapping) checked; SpecFileError, one line, for anything that does not fit."""
    try:
        return SpecFile.model_validate(dict(data))
    except ValidationError as exc:
        raise SpecFileError(one_line(exc, data)) from None


def one_line(error: ValidationError, data: Mapping[str, Any]) -> str:
    """pydantic's errors as one line: `field.path: what is wrong[; valid: ...]`, joined with "; ". Where
    pydantic tried several types for a value (`'all'` or a list), the field is named once, with what it
    must be."""
    messages: dict[str, str] = {}
    for detail in error.errors(include_url=False):
        path = _field_path(detail)
        shown = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        if shown not in messages:
            messages[shown] = _message(detail, path, _value_at(data, path, detail["input"]))
    return "; ".join(f"{shown}: {text}" if shown else text for shown, text in messages.items())


def _field_path(detail: Any) -> tuple[int | str, ...]:
    """Where the error is: its keys and list positions, up to the first part that names a type pydantic
    tried (`literal['all']`) rather than a key."""
    loc = tuple(detail["loc"])
    if detail["type"] == "extra_forbidden":
        return loc
    path: list[int | str] = []
    for part in loc:
        if not isinstance(part, int) and part not in _FIELDS:
            break
        path.append(part)
    return tuple(path)


def _value_at(data: Any, path: tuple[int | str, ...], fallback: Any) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return fallback
    return data


def _message(detail: Any, path: tuple[int | str, ...], value: Any) -> str:
    kind, field = detail["type"], next((p for p in reversed(path) if isinstance(p, str)), "")
    if kind == "extra_forbidden":
        keys = _MODELS[".".join(str(p) for p in path[:-1])].model_fields
        return f"unknown key; valid keys: {', '.join(keys)}"
    if kind == "value_error":
        return str(detail["ctx"]["error"])
    if kind == "literal_error" and field in CHOICES:
        word, choices = CHOICES[field]
        return f"unknown {word} {value!r}; valid: {', '.join(choices)}"
    description = _FIELDS[field].description if field in _FIELDS else None
    if kind == "missing":
        return f"required: {description}" if description else "required"
    if path and isinstance(path[-1], int):
        description = ITEMS.get(field)
    valid = f"; valid: {', '.join(CHOICES[field][1])}" if field in CHOICES else ""
    if description:
        return f"must be {description}, got {value!r}{valid}"
    return f"{detail['msg'][:1].lower()}{detail['msg'][1:]}, got {value!r}{valid}"
