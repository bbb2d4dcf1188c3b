"""Stand-ins for the modules KernelBench's package imports but its evaluator never uses.

`kernelbench/__init__.py` imports `utils.py`, which imports dotenv, openai and litellm (its LLM clients)
at module level; `eval.py` needs pydantic for one result class, and imports requests. Where one is not
installed, a stub in sys.modules lets `import kernelbench.eval` succeed; an installed one is used as is.
Only the judge's own process calls this.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

_DOC = "stub installed by kernelevolve's KernelBench judge: KernelBench's evaluator does not use it"


class _BaseModel:
    """pydantic.BaseModel as far as KernelBench's KernelExecResult uses it: keyword fields over the
    class's annotated defaults (copied, so no two results share a metadata dict)."""

    def __init__(self, **values: Any) -> None:
        for klass in reversed(type(self).__mro__):
            for name in getattr(klass, "__annotations__", {}):
                setattr(self, name, copy.deepcopy(getattr(type(self), name, None)))
        for name, value in values.items():
            setattr(self, name, value)

    def model_dump(self) -> dict[str, Any]:
        return dict(vars(self))


class _Unavailable:
    """A client class (openai.OpenAI) that says what it is when the evaluator's caller tries to use it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(_DOC)


def _unavailable(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(_DOC)


def _passthrough(iterable: Any = None, *args: Any, **kwargs: Any) -> Any:
    return iterable


_STUBS: dict[str, Callable[[], dict[str, Any]]] = {
    "dotenv": lambda: {"load_dotenv": lambda *a, **k: False},
    "openai": lambda: {"OpenAI": _Unavailable},
    "litellm": lambda: {"completion": _unavailable},
    "pydantic": lambda: {"BaseModel": _BaseModel},
    "requests": lambda: {"get": _unavailable, "post": _unavailable},
    "tqdm": lambda: {"tqdm": _passthrough},
}


def install_missing_stubs() -> tuple[str, ...]:
    """A stub in sys.modules for each of those modules that is not installed; their names."""
    stubbed = []
    for name, attributes in _STUBS.items():
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            continue
        module = types.ModuleType(name, _DOC)
        for attribute, value in attributes().items():
            setattr(module, attribute, value)
        sys.modules[name] = module
        stubbed.append(name)
    return tuple(stubbed)
