"""Templates follow what a spec's reference does, not how it is written or named: three template problems
(a row softmax, an argmax over the constructor's dim, a 1-D average pool), each written several equivalent
ways (functional, module and tensor-method calls, other variable names, positional or keyword arguments, an
int or a 1-tuple for a window), given as a user's op.yaml under a neutral name, get their template from
`templates_for`; the same problems changed in what they compute get none."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import load_spec_file
from kernelevolve.types import KernelSpec
from kernelevolve.variation.template_library import templates_for

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def _reference(init: str, body: str, sizes: str, inputs: str, init_inputs: str) -> str:
    return (
        f"{HEADER}class Model(nn.Module):\n    def __init__(self{init}):\n        super().__init__()\n"
        f"{body}\n\n{sizes}\n\ndef get_inputs():\n    return [{inputs}]\n\n"
        f"def get_init_inputs():\n    return [{init_inputs}]\n"
    )


def _softmax(body: str) -> str:
    return _reference("", body, "rows = 64\ncols = 1000", "torch.randn(rows, cols)", "")


def _argmax(init: str, body: str) -> str:
    return _reference(
        init, body, "b = 8\nn = 128\nm = 33\nreduce_dim = 1", "torch.randn(b, n, m)", "reduce_dim"
    )


def _avg_pool(init: str, body: str) -> str:
    return _reference(
        init, body, "batch = 4\nchannels = 8\nlength = 96", "torch.randn(batch, channels, length)", "5, 2, 1"
    )


SOFTMAX = [
    "    def forward(self, x):\n        return torch.softmax(x, dim=1)",
    "    def forward(self, logits):\n        return F.softmax(logits, -1)",
    "        self.normalise = nn.Softmax(dim=-1)\n\n    def forward(self, scores):\n        return self.normalise(scores)",
    "    def forward(self, t):\n        probabilities = t.softmax(dim=1)\n        return probabilities",
]
ARGMAX = [
    (
        ", dim: int",
        "        self.dim = dim\n\n    def forward(self, x):\n        return torch.argmax(x, dim=self.dim)",
    ),
    (
        ", axis",
        "        self.axis = axis\n\n    def forward(self, values):\n        return values.argmax(self.axis)",
    ),
    (
        ", d",
        "        self.over = d\n\n    def forward(self, t):\n        return torch.argmax(input=t, dim=self.over, keepdim=False)",
    ),
]
AVG_POOL = [
    (
        ", kernel_size, stride, padding",
        "        self.pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)\n\n"
        "    def forward(self, x):\n        return self.pool(x)",
    ),
    (
        ", k, s, p",
        "        self.k, self.s, self.p = k, s, p\n\n"
        "    def forward(self, signal):\n        return F.avg_pool1d(signal, self.k, self.s, self.p)",
    ),
    (
        ", window, step, pad",
        "        self.window, self.step, self.pad = window, step, pad\n\n"
        "    def forward(self, x):\n"
        "        return F.avg_pool1d(x, kernel_size=(self.window,), stride=(self.step,), padding=(self.pad,))",
    ),
    (
        ", *window",
        "        self.window = window\n\n    def forward(self, x):\n        return torch.avg_pool1d(x, *self.window)",
    ),
]

CASES = (
    [("softmax", _softmax(body), {"rows": 5, "cols": 300}) for body in SOFTMAX]
    + [
        ("argmax_dim", _argmax(init, body), {"b": 3, "n": 7, "m": 5, "reduce_dim": 2})
        for init, body in ARGMAX
    ]
    + [("avg_pool1d", _avg_pool(init, body), {"batch": 2, "length": 31}) for init, body in AVG_POOL]
)


def _user_spec(tmp_path: Path, code: str, shape: dict[str, int], name: str = "my_op") -> KernelSpec:
    """The spec a user's op.yaml gives: a neutral name, no tags, the reference inline, one shape case."""
    path = tmp_path / "op.yaml"
    path.write_text(
        yaml.safe_dump({"name": name, "reference_code": code, "shapes": [{"name": "small", **shape}]})
    )
    return load_spec_file(path, load_platform("cpu"))


@pytest.mark.parametrize(("family", "code", "shape"), CASES)
def test_each_equivalent_form_gets_its_template(tmp_path: Path, family: str, code: str, shape: dict) -> None:
    spec = _user_spec(tmp_path, code, shape)
    assert spec.tags == ()
    assert {t.family for t in templates_for(spec, "triton")} == {family}


@pytest.mark.parametrize(
    ("family", "code", "shape"),
    [
        (
            "softmax",
            _softmax("    def forward(self, x):\n        return torch.softmax(x, dim=0)"),
            {"rows": 5},
        ),
        (  # the rows of a 3-D input: not the templates' 2-D rows
            "softmax",
            _reference(
                "", "    def forward(self, x):\n        return x.softmax(-1)", "", "torch.randn(4, 8, 16)", ""
            ),
            {},
        ),
        (  # another dim than the constructor gives, which the template's ModelNew(dim) reduces over
            "argmax_dim",
            _argmax(
                ", dim", "        self.dim = dim\n\n    def forward(self, x):\n        return x.argmax(2)"
            ),
            {},
        ),
        (
            "argmax_dim",
            _argmax(
                ", dim",
                "        self.dim = dim\n\n    def forward(self, x):\n        return x.argmin(self.dim)",
            ),
            {},
        ),
        (
            "avg_pool1d",
            _avg_pool(
                ", k, s, p",
                "        self.k, self.s, self.p = k, s, p\n\n    def forward(self, x):\n"
                "        return F.avg_pool1d(x, self.k, self.s, self.p, count_include_pad=False)",
            ),
            {},
        ),
        (
            "avg_pool1d",
            _avg_pool(
                ", k, s, p",
                "        self.k, self.s, self.p = k, s, p\n\n"
                "    def forward(self, x):\n        return F.max_pool1d(x, self.k, self.s, self.p)",
            ),
            {},
        ),
    ],
)
def test_the_same_problem_computing_something_else_gets_none(
    tmp_path: Path, family: str, code: str, shape: dict
) -> None:
    spec = _user_spec(tmp_path, code, shape)
    assert family not in {t.family for t in templates_for(spec, "triton")}


def test_a_name_is_not_a_program(tmp_path: Path) -> None:
    relu = _softmax("    def forward(self, x):\n        return torch.relu(x)")
    assert templates_for(_user_spec(tmp_path, relu, {}, name="softmax"), "triton") == []


def test_a_family_must_hold_at_every_shape_case(tmp_path: Path) -> None:
    """A shape case that makes the input 3-D (through a rank constant) takes the 2-D softmax templates away."""
    code = _reference(
        "",
        "    def forward(self, x):\n        return torch.softmax(x, dim=-1)",
        "rows = 64\ncols = 1000\ndepth = 0",
        "torch.randn(rows, cols) if not depth else torch.randn(depth, rows, cols)",
        "",
    )
    assert {t.family for t in templates_for(_user_spec(tmp_path, code, {"rows": 5}), "triton")} == {"softmax"}
    assert templates_for(_user_spec(tmp_path, code, {"depth": 2}), "triton") == []


def test_a_reference_calling_a_wrapper_function_gets_its_template(tmp_path: Path) -> None:
    """The forward calls a module-level helper that calls softmax (how converted benchmarks write it):
    tracing sees through the call, so the template still matches."""
    code = _softmax("    def forward(self, x):\n        return my_softmax(x)").replace(
        "class Model", "def my_softmax(x):\n    return torch.softmax(x, -1)\n\n\nclass Model"
    )
    assert {t.family for t in templates_for(_user_spec(tmp_path, code, {"rows": 5}), "triton")} == {"softmax"}
    nested = code.replace("return torch.softmax(x, -1)", "return _inner(x)").replace(
        "def my_softmax", "def _inner(t):\n    return F.softmax(t, dim=1)\n\n\ndef my_softmax"
    )
    assert {t.family for t in templates_for(_user_spec(tmp_path, nested, {}), "triton")} == {"softmax"}
