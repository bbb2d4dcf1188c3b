"""Static rules for the doors red-team round 3 found (every mode): a wrapper's original kept in a function's
defaults, the C base class reached by `super()` or `mro()`, raw-memory array protocols, interpreter hooks."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import LAUNCH, codes, model

BODY = f"out = torch.empty_like(x)\n{LAUNCH}\n{{forward}}\nreturn out"


def lenient_codes(forward: str, extra: str = "") -> set[str]:
    return codes(model(BODY.format(forward=forward), extra=extra), strict=False)


@pytest.mark.parametrize(
    ("extra", "forward"),
    [
        ("", "f = torch.Tensor.tolist.__kwdefaults__['_original']"),
        ("", "f = torch.Tensor.tolist.__defaults__"),
        ("", "base = type(x).mro()[1]"),
        ("", "v = super(torch.Tensor, x).tolist()"),
        ("", "v = super(type(x), x).tolist()"),
        ("", "s = super\nv = s(torch.Tensor, x)"),
        ("class Box:\n    pass\n\n\nBox = torch.Tensor\n", "v = super(Box, x).tolist()"),
        ("import types\n", "a = types.SimpleNamespace(__array_interface__={})"),
        ("import types\n", "k = '__array_' + 'interface__'\na = types.SimpleNamespace(**{k: {}})"),
        ("", "R = type('R', (), {'_' + '_array_interface__': {}})"),
        ("class Raw:\n    def __getattr__(self, name):\n        return {}\n", ""),
        ("class Raw:\n    pass\n\n\nRaw.__getattr__ = lambda self, name: {}\n", ""),
        ("", "a = {'__array_struct__': 0}"),
        ("class Raw:\n    @property\n    def __cuda_array_interface__(self):\n        return {}\n", ""),
        ("import sys\n", "sys.addaudithook(print)"),
        ("from sys import unraisablehook\n", ""),
        ("import sys as s\n", "s.setswitchinterval(1.0)"),
        ("import faulthandler\n", "faulthandler.register(18)"),
        ("", "s = '{0.sys.modules}'.format(torch)"),  # round 5: format fields read by name
        ("", "s = '{t[0]}'.format_map({'t': [x]})"),
        ("", "s = '{0:{1.__class__}}'.format(1, x)"),
        ("", "t = '{0.' + 'sys}'\ns = t.format(torch)"),
        ("", "s = str.format('{0.sys}', torch)"),
        ("", "f = '{0.sys}'.format"),
    ],
)
def test_door_is_rejected(extra: str, forward: str) -> None:
    assert lenient_codes(forward, extra) & {"introspection", "dynamic_code"}


@pytest.mark.parametrize(
    ("extra", "forward"),
    [
        ("class Base(nn.Module):\n    pass\n", "super(Base, self).__init__()"),  # a class the module defines
        ("import sys\n", "print(sys.maxsize, sys.version_info, file=sys.stderr)"),
        ("import types\n", "box = types.SimpleNamespace(result=out)"),
        ("", "s = '{} {:.3f} {name!r}'.format(x.shape, 1.0, name='relu')"),
    ],
)
def test_honest_forms_stay_allowed(extra: str, forward: str) -> None:
    assert lenient_codes(forward, extra) == set()


def test_modules_loaded_lazily_resolve_on_the_first_check() -> None:
    """A package that loads a submodule on first attribute access (NumPy's `ctypeslib`) still names the
    module it holds: the resolution walks every module attribute, not only what was loaded before."""
    from kernelevolve.eval.static.module import canonical

    assert canonical("numpy.ctypeslib.ctypes.string_at") == "ctypes.string_at"
    assert canonical("torch.os.fork") == "os.fork"
    assert canonical("torch.nn.functional.relu") == "torch.nn.functional.relu"


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ("import posix\n", "module_not_allowed"),  # `os` unfiltered
        ("import imp\n", "module_not_allowed"),  # runs a file the runner may write
        ("import codecs\n", "module_not_allowed"),
        ("import wrapt\n", "module_not_allowed"),  # patches an object named by text
        ("from hydra.utils import get_object\n", "module_not_allowed"),
        ("import jinja2\n", "module_not_allowed"),
        ("import safetensors.torch\n", "module_not_allowed"),
        ("x0 = __import__('numpy').f2py\n", "dynamic_code"),
        ("import numpy as np\nf = np.f2py.compile\n", "dynamic_code"),  # numpy is allowed, its f2py is not
        ("import torch\np = torch.package.PackageImporter\n", "dynamic_code"),
        ("import triton.runtime.build\n", "dynamic_code"),
        ("from triton.runtime import cache\n", "dynamic_code"),
        ("import triton\nk = triton.knobs\n", "dynamic_code"),
        ("from cuda.bindings import nvrtc\n", "dynamic_code"),
    ],
)
def test_modules_outside_the_allow_list_and_triton_doors_are_rejected(extra: str, code: str) -> None:
    assert code in lenient_codes("", extra=extra)


@pytest.mark.parametrize(
    "extra",
    [
        "import math\nimport typing\nimport functools\nimport itertools\nimport dataclasses\nimport collections\n",
        "import numpy as np\nimport einops\nfrom collections.abc import Sequence\nfrom enum import Enum\n",
        "import os\nJOIN = os.path.join('a', 'b')\n",
        "import triton\nDEVICE = triton.runtime.driver.active.get_active_torch_device\n",
        "import cuda.bindings.driver as cuda\nSTREAM = cuda.CUstream\n",
    ],
)
def test_the_modules_honest_kernels_import_stay_legal(extra: str) -> None:
    assert lenient_codes("", extra=extra) == set()
