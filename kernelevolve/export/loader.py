"""Import a winning kernel's source in this process and return its `ModelNew` class.

Sources are written to content-addressed files under the cache dir (Triton reads kernel source
through `inspect`, so it must come from a real file) and imported once per process and device kind.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
import types
from typing import Any

from kernelevolve.backends.loading import kernel_module_name
from kernelevolve.types import candidate_id

log = logging.getLogger(__name__)

_load_lock = threading.Lock()
_loaded: dict[str, type] = {}


class KernelLoadError(ValueError):
    """A kernel source that cannot be imported here; the message says why."""


def _use_interpreter() -> None:
    """Run Triton on CPU tensors: TRITON_INTERPRET=1 for the process, and Triton's own helpers interpreted.

    Triton decides at import time whether its own helpers (tl.cdiv, tl.sum...) are interpreted, and
    reads TRITON_INTERPRET again when a kernel is decorated and first launched; so, like an
    evaluation worker, the process keeps TRITON_INTERPRET=1 once a CPU kernel is loaded. Where triton
    was imported compiled (torch._dynamo imports it) on a machine with no GPU, the helpers are
    switched to their interpreted form here, as the import would have made them; with a GPU that
    would break compiled kernels in this process, so it raises instead.
    """
    if "triton" in sys.modules and not interpreter_ready():
        import torch

        if torch.cuda.is_available():
            raise KernelLoadError(
                "triton was imported before TRITON_INTERPRET=1 was set (torch._dynamo imports it), so its "
                "helpers are compiled, and this process has a GPU whose kernels need them so: run CPU "
                "Triton kernels in a process started with TRITON_INTERPRET=1, or load them for the GPU"
            )
        count = _interpret_triton_language()
        log.info("triton was imported compiled; %d of its helpers switched to the interpreter", count)
    if os.environ.get("TRITON_INTERPRET") != "1":
        log.info("setting TRITON_INTERPRET=1 for this process to run Triton kernels on the CPU")
        os.environ["TRITON_INTERPRET"] = "1"


def _interpret_triton_language() -> int:
    """Replace every `@jit` helper of triton.language (module attributes, tensor methods) by its
    interpreted form, as `import triton` does under TRITON_INTERPRET=1; returns how many."""
    from triton.language import core
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    modules = [
        m
        for name, m in list(sys.modules.items())
        if isinstance(m, types.ModuleType)
        and (name == "triton.language" or name.startswith("triton.language."))
    ]
    swapped: dict[int, Any] = {}
    for module in modules:
        for key, value in list(vars(module).items()):
            if isinstance(value, JITFunction):
                swapped.setdefault(id(value), InterpretedFunction(value.fn))
                setattr(module, key, swapped[id(value)])
    for key, value in list(vars(core.tensor).items()):
        if isinstance(value, JITFunction):
            interpreted = swapped.setdefault(id(value), InterpretedFunction(value.fn))
            # Under the interpreter a tensor method is a plain function (bound to the tensor), not the helper
            setattr(core.tensor, key, _method(interpreted))
    return len(swapped)


def _method(function: Any) -> Any:
    def method(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return method


def interpreter_ready() -> bool:
    """True when triton is not imported yet, or was imported with its interpreter on."""
    if "triton" not in sys.modules:
        return True
    import triton.language.standard as standard
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(standard.cdiv, InterpretedFunction)


def load_kernel_class(source: str, backend: str = "triton", device: str = "cpu") -> type:
    """Import a kernel source (from a real file: Triton reads kernels through `inspect`) -> its ModelNew.

    Files are content-addressed under the cache dir; a source is imported once per process and
    device kind. Loading for the CPU sets TRITON_INTERPRET=1 for the process (see `_use_interpreter`).
    """
    from kernelevolve.paths import cache_dir

    digest = candidate_id(source, backend)
    interpret = device.split(":")[0] == "cpu"
    key = f"{digest}_{'interp' if interpret else 'native'}"
    with _load_lock:
        if key in _loaded:
            return _loaded[key]
        module_name = kernel_module_name(digest)  # the runner's shape: see `kernel_module_name`
        folder = cache_dir() / "kernels"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{digest}.py"
        if not path.is_file() or path.read_text() != source:
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(source)
            tmp.replace(path)
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise KernelLoadError(f"cannot import kernel file {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            if interpret and backend == "triton":
                _use_interpreter()
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        model_new = getattr(module, "ModelNew", None)
        if not isinstance(model_new, type):
            raise KernelLoadError(f"kernel {digest} does not define class ModelNew")
        _loaded[key] = model_new
        return model_new
