"""Turn an ``nn.Module`` (class or instance) plus example inputs into a KernelBench-style spec.

The reference source is the class's own source, renamed to ``Model``, preceded by what it needs from
the module that defines it: imports for the modules it names, the source of helper functions and
classes defined beside it (or imports of those that live in importable packages), and the literal
values of plain constants. ``get_inputs`` rebuilds inputs of the example shapes and dtypes from
module-level size constants (``x_dim0 = 8``), so further shapes are shape cases overriding those
constants, as in every shipped spec. Constructor arguments come from ``init_inputs`` or, for an
instance, from attributes named like the constructor's parameters; the result is checked by
rebuilding the module from the generated source and comparing state and outputs with the original.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import logging
import re
import symtable
import sys
import textwrap
import types
from collections.abc import Sequence
from typing import Any

from kernelevolve.types import KernelSpec, ShapeCase

log = logging.getLogger(__name__)

DTYPES = ("float32", "float16", "bfloat16")
_PLAIN = (bool, int, float, str, type(None))


class ModuleSourceError(ValueError):
    """The module cannot be written down as a standalone reference; the message says why and what to do."""


def _is_plain(value: Any) -> bool:
    if isinstance(value, _PLAIN):
        return True
    return isinstance(value, (tuple, list)) and all(_is_plain(v) for v in value)


def module_class(module: Any) -> type:
    import torch

    cls = module if isinstance(module, type) else type(module)
    if not issubclass(cls, torch.nn.Module):
        raise TypeError(f"expected an nn.Module class or instance, got {cls.__name__}")
    return cls


# ------------------------------------------------------------------------------------------ source


def _object_source(obj: Any, what: str) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError) as exc:
        where = getattr(obj, "__module__", "?")
        raise ModuleSourceError(
            f"cannot retrieve the source of {what} {getattr(obj, '__qualname__', obj)!r} (module {where}): "
            f"{exc}. Define it in a .py file (not an interactive session or exec), or pass a KernelSpec "
            "or a spec file instead"
        ) from None


def _global_names(source: str) -> list[str]:
    """Names the source reads from its module's globals (not builtins), in first-use order."""
    found: dict[str, None] = {}
    _walk_globals(symtable.symtable(source, "<reference>", "exec"), found)
    return [name for name in found if not hasattr(builtins, name)]


def _walk_globals(table: symtable.SymbolTable, found: dict[str, None]) -> None:
    for symbol in table.get_symbols():
        if symbol.is_referenced() and symbol.is_global():
            if table.get_type() == "module" and symbol.is_assigned():
                continue
            found.setdefault(symbol.get_name(), None)
    for child in table.get_children():
        _walk_globals(child, found)


def _importable(module_name: str, qualname: str, value: Any) -> bool:
    if module_name in ("__main__", "builtins") or "." in qualname or "<" in qualname:
        return False
    try:
        return getattr(importlib.import_module(module_name), qualname, None) is value
    except Exception:
        return False


class _Collector:
    """Walks the globals a class needs, emitting imports, constants and helper definitions."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.home = sys.modules.get(cls.__module__)
        self.globals: dict[str, Any] = vars(self.home) if self.home is not None else {}
        self.imports: dict[str, str] = {}
        self.constants: dict[str, str] = {}
        self.definitions: list[str] = []
        self._seen: set[str] = set()

    def visit(self, source: str, owner: str) -> None:
        for name in _global_names(source):
            if name in self._seen or name == self.cls.__name__:
                continue
            self._seen.add(name)
            if name not in self.globals:
                raise ModuleSourceError(
                    f"{owner} uses {name!r}, which is not a module-level name of {self.cls.__module__} "
                    "(a closure variable or a name made at run time); move it to module level"
                )
            self._add(name, self.globals[name], owner)

    def _add(self, name: str, value: Any, owner: str) -> None:
        import torch

        if isinstance(value, types.ModuleType):
            module_name = value.__name__
            self.imports[name] = f"import {module_name}" + (f" as {name}" if module_name != name else "")
        elif _is_plain(value) or isinstance(value, torch.dtype):
            self.constants[name] = f"{name} = {value!r}"
        else:
            module_name = getattr(value, "__module__", None) or ""
            qualname = getattr(value, "__qualname__", None) or getattr(value, "_name", None) or name
            if module_name != self.cls.__module__:
                # Library functions and classes, typing forms: imported from where they live.
                for attr in dict.fromkeys([qualname, name]):
                    if _importable(module_name, attr, value):
                        alias = f" as {name}" if attr != name else ""
                        self.imports[name] = f"from {module_name} import {attr}{alias}"
                        return
            if not isinstance(value, (type, types.FunctionType)):
                raise ModuleSourceError(
                    f"{owner} uses the module-level {type(value).__name__} {name!r}, which cannot be written "
                    "into a standalone reference; pass it through the constructor or make it a plain constant"
                )
            if getattr(value, "__name__", name) != name:
                raise ModuleSourceError(
                    f"{owner} uses {name!r}, an alias of {qualname!r}; use the name itself"
                )
            source = _object_source(value, "helper")
            self.visit(source, repr(name))  # its own needs first, so definitions come in a valid order
            self.definitions.append(source)


def _renamed(source: str, old: str, new: str = "Model") -> str:
    """`source` with the class `old` (its definition and every use) renamed; comments and layout kept."""
    if old == new:
        return source
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int]] = []  # (line index, column, length)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == old:
            edits.append((node.lineno - 1, node.col_offset, len(old)))
        elif isinstance(node, ast.ClassDef) and node.name == old:
            for index in range(node.lineno - 1, len(lines)):  # after any decorators
                match = re.match(rf"(\s*class\s+){re.escape(old)}\b", lines[index])
                if match:
                    edits.append((index, match.end(1), len(old)))
                    break
    for index, column, length in sorted(edits, reverse=True):
        text = lines[index].encode()
        lines[index] = (text[:column] + new.encode() + text[column + length :]).decode()
    return "".join(lines)


# ------------------------------------------------------------------------------------------ inputs


def as_input_list(example_inputs: Any) -> list[Any]:
    """A tensor, or a tuple/list of forward's positional arguments, as a list."""
    import torch

    if isinstance(example_inputs, torch.Tensor):
        return [example_inputs]
    if isinstance(example_inputs, (tuple, list)):
        return list(example_inputs)
    raise TypeError(
        "example_inputs must be a tensor or a tuple/list of forward's positional arguments, "
        f"got {type(example_inputs).__name__}"
    )


def _forward_names(cls: Any, count: int) -> list[str]:
    params = list(inspect.signature(cls.forward).parameters.values())[1:]  # drop self
    names: list[str] = []
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            break
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
    names = [re.sub(r"\W", "_", n) for n in names[:count]]
    return names + [f"input{i}" for i in range(len(names), count)]


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _input_expression(name: str, value: Any, dims: list[str]) -> str:
    import torch

    if not isinstance(value, torch.Tensor):
        return name
    size = f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"
    dtype = f"torch.{_dtype_name(value.dtype)}"
    if value.dtype == torch.bool:
        return f"torch.rand({size}) < 0.5"
    if value.is_floating_point():
        # Non-negative examples (variances, probabilities) keep non-negative values.
        nonnegative = value.numel() > 0 and bool((value.detach() >= 0).all())
        return f"torch.{'rand' if nonnegative else 'randn'}({size}, dtype={dtype})"
    if value.numel() == 0:
        return f"torch.zeros({size}, dtype={dtype})"
    # Integer inputs are usually indices: keep them inside the example's range.
    low, high = int(value.min()), int(value.max()) + 1
    return f"torch.randint({low}, {high}, {size}, dtype={dtype})"


def _size_constants(names: list[str], inputs: list[Any], taken: set[str]) -> dict[str, list[str]]:
    import torch

    constants: dict[str, list[str]] = {}
    for name, value in zip(names, inputs, strict=True):
        if isinstance(value, torch.Tensor):
            dims = []
            for axis in range(value.dim()):
                constant = f"{name}_dim{axis}"
                while constant in taken:
                    constant += "_"
                taken.add(constant)
                dims.append(constant)
            constants[name] = dims
        elif _is_plain(value):
            constants[name] = []
        else:
            raise ModuleSourceError(
                f"forward argument {name!r} is a {type(value).__name__}; only tensors and plain numbers "
                "can be example inputs"
            )
    return constants


def _shape_params(constants: dict[str, list[str]], names: list[str], inputs: list[Any]) -> dict[str, Any]:
    import torch

    params: dict[str, Any] = {}
    for name, value in zip(names, inputs, strict=True):
        if isinstance(value, torch.Tensor):
            params.update(zip(constants[name], (int(d) for d in value.shape), strict=True))
    return params


def _shape_name(inputs: list[Any]) -> str:
    import torch

    parts = [
        "x".join(str(int(d)) for d in t.shape) or "scalar" for t in inputs if isinstance(t, torch.Tensor)
    ]
    return "_".join(parts) or "default"


def _check_compatible(example: list[Any], other: list[Any], index: int) -> None:
    import torch

    if len(other) != len(example):
        raise ValueError(
            f"more_inputs[{index}] has {len(other)} argument(s); example_inputs has {len(example)}"
        )
    for position, (a, b) in enumerate(zip(example, other, strict=True)):
        same = (
            (a.dim(), a.dtype) == (b.dim(), b.dtype)
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
            else not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) and a == b
        )
        if not same:
            raise ValueError(
                f"more_inputs[{index}] argument {position} differs from example_inputs in kind, rank or "
                "dtype (only sizes may change between shapes)"
            )


# ------------------------------------------------------------------------------------------ init


def infer_init_inputs(module: Any) -> list[Any]:
    """Constructor arguments of an instance: attributes named like the parameters, else defaults."""
    cls: Any = module_class(module)
    signature = inspect.signature(cls.__init__)
    values: list[Any] = []
    for param in list(signature.parameters.values())[1:]:
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue  # nothing to infer (nn.Module's own __init__); the state check catches a wrong guess
        has_default = param.default is not inspect.Parameter.empty
        if not isinstance(module, type) and _is_plain(getattr(module, param.name, object())):
            value = getattr(module, param.name)
        elif has_default:
            value = param.default
        else:
            raise ModuleSourceError(
                f"cannot tell {cls.__name__}'s constructor argument {param.name!r} from "
                f"{'the class' if isinstance(module, type) else 'the instance'} (no attribute of that name, "
                "no default); pass init_inputs=[...] with the constructor's positional arguments"
            )
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            if has_default and value == param.default:
                continue
            raise ModuleSourceError(
                f"{cls.__name__}.__init__ has keyword-only argument {param.name!r}; KernelBench references "
                "take positional constructor arguments"
            )
        values.append(value)
    return values


# ------------------------------------------------------------------------------------------ spec


def spec_dtype(inputs: list[Any], module: Any) -> str:
    import torch

    floats = [t.dtype for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not floats and isinstance(module, torch.nn.Module):
        floats = [p.dtype for p in module.parameters() if p.is_floating_point()][:1]
    name = _dtype_name(floats[0]) if floats else "float32"
    if name not in DTYPES:
        raise ModuleSourceError(f"floating dtype {name} is not supported; use one of {DTYPES}")
    if len({_dtype_name(d) for d in floats}) > 1:
        log.warning("example inputs mix floating dtypes; the spec casts all of them to %s", name)
    return name


def reference_source(module: Any, example_inputs: Any, init_inputs: Sequence[Any] | None = None) -> str:
    """KernelBench-form source (Model, size constants, get_inputs, get_init_inputs) for the module."""
    inputs = as_input_list(example_inputs)
    init = list(init_inputs) if init_inputs is not None else infer_init_inputs(module)
    return _generate(module_class(module), inputs, init)[0]


def _generate(cls: type, inputs: list[Any], init: list[Any]) -> tuple[str, list[str], dict[str, list[str]]]:
    """(source, forward argument names, size-constant names per argument)."""
    if not all(_is_plain(v) for v in init):
        raise ModuleSourceError(
            "init_inputs must be plain numbers, strings or tuples/lists of them (KernelBench form), got "
            + ", ".join(type(v).__name__ for v in init if not _is_plain(v))
        )
    class_source = _object_source(cls, "class")
    collector = _Collector(cls)
    collector.visit(class_source, f"class {cls.__name__}")
    if "Model" in collector._seen and cls.__name__ != "Model":
        raise ModuleSourceError(f"{cls.__name__} uses another module-level name 'Model'; rename it")
    names = _forward_names(cls, len(inputs))
    taken = set(collector._seen) | {"Model", "get_inputs", "get_init_inputs", "torch", *names}
    constants = _size_constants(names, inputs, taken)
    imports = dict(collector.imports)
    imports.setdefault("torch", "import torch")
    header = f'"""Reference for {cls.__name__} (from {cls.__module__}), written by kernelevolve."""'
    import_lines = sorted(set(imports.values()), key=lambda s: (s.startswith("from"), s))
    blocks = [header + "\n\n" + "\n".join(import_lines)]
    if collector.constants:
        blocks.append("\n".join(collector.constants.values()))
    blocks += [_renamed(block.rstrip(), cls.__name__) for block in [*collector.definitions, class_source]]
    lines = ["\n\n\n".join(blocks), "", ""]
    lines.append("# Input sizes; a shape case overrides these.")
    for name, value in zip(names, inputs, strict=True):
        if _is_plain(value):
            lines.append(f"{name} = {value!r}")
        else:
            sizes = [int(size) for size in value.shape]
            lines += [f"{constant} = {size}" for constant, size in zip(constants[name], sizes, strict=True)]
    expressions = [_input_expression(n, v, constants[n]) for n, v in zip(names, inputs, strict=True)]
    lines += ["", "", "def get_inputs():", f"    return [{', '.join(expressions)}]", ""]
    lines += ["", "def get_init_inputs():", f"    return {list(init)!r}", ""]
    return "\n".join(lines), names, constants


def module_spec(
    module: Any,
    example_inputs: Any,
    *,
    init_inputs: Sequence[Any] | None = None,
    more_inputs: Sequence[Any] = (),
    name: str | None = None,
    check: bool = True,
) -> KernelSpec:
    """A KernelSpec whose reference is `module`'s class; one shape case per example input set."""
    cls = module_class(module)
    inputs = as_input_list(example_inputs)
    init = list(init_inputs) if init_inputs is not None else infer_init_inputs(module)
    source, names, constants = _generate(cls, inputs, init)
    shapes: list[ShapeCase] = []
    for index, args in enumerate([inputs, *(as_input_list(m) for m in more_inputs)]):
        if index:
            _check_compatible(inputs, args, index - 1)
        shape_name = _shape_name(args)
        while shape_name in {s.name for s in shapes}:
            shape_name += "_"
        shapes.append(ShapeCase(shape_name, _shape_params(constants, names, args)))
    dtype = spec_dtype(inputs, module)
    from kernelevolve.specs.loading import DEFAULT_TOLERANCE

    spec = KernelSpec(
        name=name or re.sub(r"\W+", "_", cls.__name__).strip("_").lower() or "module",
        reference_source=source,
        dtype=dtype,
        atol=DEFAULT_TOLERANCE[dtype],
        rtol=DEFAULT_TOLERANCE[dtype],
        shapes=tuple(shapes),
        origin=f"module:{cls.__module__}.{cls.__qualname__}",
        description=(inspect.getdoc(cls) or "").split("\n")[0],
    )
    if check and not isinstance(module, type):
        check_reproduces(spec, module, inputs, init)
    return spec


def check_reproduces(spec: KernelSpec, module: Any, inputs: list[Any], init: list[Any]) -> None:
    """Rebuild the module from the generated source and compare state and outputs with the original."""
    import torch

    from kernelevolve.specs.reference_module import load_reference_module

    try:
        namespace = load_reference_module(spec.reference_source)
        rebuilt = namespace.Model(*init)
    except Exception as exc:
        raise ModuleSourceError(
            f"the generated reference for {type(module).__name__} does not build: {type(exc).__name__}: {exc}"
        ) from exc
    original = module.state_dict()
    mine = rebuilt.state_dict()
    shapes = {k: tuple(v.shape) for k, v in original.items()}
    rebuilt_shapes = {k: tuple(v.shape) for k, v in mine.items()}
    if shapes != rebuilt_shapes:
        differ = sorted(k for k in {*shapes, *rebuilt_shapes} if shapes.get(k) != rebuilt_shapes.get(k))
        detail = ", ".join(f"{k}: {rebuilt_shapes.get(k)} vs {shapes.get(k)}" for k in differ[:4])
        raise ModuleSourceError(
            f"{type(module).__name__}(*{init!r}) built from the generated reference has different state than "
            f"the instance ({detail}); pass the right init_inputs=[...]"
        )
    device = next((t.device for t in original.values()), None) or next(
        (t.device for t in inputs if isinstance(t, torch.Tensor)), torch.device("cpu")
    )
    rebuilt = rebuilt.to(device)
    rebuilt.load_state_dict(original)
    rebuilt.train(module.training)
    with torch.no_grad():
        expected = module(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
        got = rebuilt(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
    flat_expected = expected if isinstance(expected, (tuple, list)) else [expected]
    flat_got = got if isinstance(got, (tuple, list)) else [got]
    same = len(flat_expected) == len(flat_got) and all(
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and torch.allclose(a.float(), b.float(), atol=spec.atol, rtol=spec.rtol, equal_nan=True)
        for a, b in zip(flat_expected, flat_got, strict=False)
    )
    if not same:
        hint = " (the module is in training mode; call .eval() first)" if module.training else ""
        raise ModuleSourceError(
            f"the generated reference does not reproduce {type(module).__name__}'s output on the example "
            f"inputs{hint}; it may depend on state the source does not show"
        )
