"""Template families come from what a reference does: the same program written another way (functional or
module calls, other names, other argument spellings) gets the same family, and a different program none."""

from __future__ import annotations

import pytest

from kernelevolve.bench.kernelbench.problems import Problem, problem_tags
from kernelevolve.specs.traced_families import trace_program, traced_families


def _reference(init: str, forward: str, inputs: str, init_inputs: str, header: str = "") -> str:
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        f"{header}\n"
        "class Model(nn.Module):\n"
        f"    def __init__(self{init}):\n        super().__init__()\n{forward}\n"
        f"def get_inputs():\n    return [{inputs}]\n\n"
        f"def get_init_inputs():\n    return [{init_inputs}]\n"
    )


ARGMAX_FORMS = [  # KernelBench 51's program, as written there and two other ways
    ", dim: int",
    "        self.dim = dim\n    def forward(self, x):\n        return torch.argmax(x, dim=self.dim)",
    ", axis",
    "        self.axis = axis\n    def forward(self, values):\n        return values.argmax(self.axis)",
    ", d",
    "        self.reduce_over = d\n    def forward(self, t):\n        out = torch.argmax(input=t, dim=self.reduce_over)\n        return out",
]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_an_argmax_over_the_constructors_dim_is_one_program_however_written(index: int) -> None:
    init, body = ARGMAX_FORMS[2 * index], ARGMAX_FORMS[2 * index + 1]
    code = _reference(init, body, "torch.randn(16, 256, 256)", "1")
    assert traced_families(code) == ("argmax_dim",)


def test_an_argmax_whose_dim_the_constructor_does_not_take_is_not_the_template() -> None:
    """The template's ModelNew(dim) is built from the same constructor arguments: a fixed dim cannot be."""
    code = _reference(
        "", "    def forward(self, x):\n        return torch.argmax(x, dim=1)", "torch.randn(4, 8)", ""
    )
    assert traced_families(code) == ()


@pytest.mark.parametrize(
    "body",
    [
        "    def forward(self, x):\n        return torch.softmax(x, dim=1)",  # KernelBench 23
        "    def forward(self, logits):\n        return F.softmax(logits, -1)",
        "        self.act = nn.Softmax(dim=1)\n    def forward(self, x):\n        return self.act(x)",
    ],
)
def test_a_row_softmax_is_one_program_as_a_function_a_method_or_a_module(body: str) -> None:
    assert "softmax" in traced_families(_reference("", body, "torch.randn(16, 16384)", ""))
    three_d = _reference("", body, "torch.randn(4, 16, 64)", "")
    assert "softmax" not in traced_families(three_d)  # the templates' rows are a 2-D input's


@pytest.mark.parametrize(
    "expression",
    [
        "x / torch.norm(x, p=2, dim=1, keepdim=True)",  # KernelBench 39
        "x / x.norm(2, 1, keepdim=True)",
        "x / torch.linalg.vector_norm(x, ord=2, dim=1, keepdim=True)",
    ],
)
def test_an_l2_row_normalisation_is_one_program_however_spelled(expression: str) -> None:
    code = _reference(
        "", f"    def forward(self, x):\n        return {expression}", "torch.randn(16, 16384)", ""
    )
    assert traced_families(code) == ("l2norm_dim1",)


def test_a_kernelbench_problem_gets_its_family_from_the_trace_not_its_name() -> None:
    code = _reference(
        ", dim: int",
        "        self.dim = dim\n    def forward(self, x):\n        return x.cumsum(self.dim)",
        "torch.randn(8, 64)",
        "1",
    )
    assert "cumsum_dim" in problem_tags(Problem(1, 999, "999_renamed_anything", code))
    softmax_named = _reference(
        "", "    def forward(self, x):\n        return torch.relu(x)", "torch.randn(8, 64)", ""
    )
    assert "softmax" not in problem_tags(Problem(1, 23, "23_Softmax", softmax_named))


def test_a_reference_that_cannot_run_on_meta_tensors_has_no_traced_program() -> None:
    code = _reference(
        "", "    def forward(self, x):\n        return torch.tensor(x.tolist())", "torch.randn(4)", ""
    )
    assert trace_program(code) is None and traced_families(code) == ()


@pytest.mark.parametrize(
    ("init", "body", "init_inputs", "family"),
    [
        (  # KernelBench 42's module, as a functional call on differently named attributes
            ", k, s, p, d",
            "        self.window, self.step, self.pad, self.spread = k, s, p, d\n"
            "    def forward(self, image):\n"
            "        return F.max_pool2d(image, self.window, self.step, self.pad, self.spread)",
            "4, 1, 1, 1",
            "max_pool2d",
        ),
        (  # an average pool whose stride the constructor leaves to default to the window
            ", kernel_size",
            "        self.pool = nn.AvgPool2d(kernel_size)\n    def forward(self, x):\n        return self.pool(x)",
            "11",
            "avg_pool2d",
        ),
    ],
)
def test_a_pool_is_one_program_as_a_module_or_a_function(
    init: str, body: str, init_inputs: str, family: str
) -> None:
    code = _reference(init, body, "torch.randn(2, 3, 64, 64)", init_inputs)
    assert traced_families(code) == (family,)


def test_a_pool_whose_window_the_constructor_does_not_give_is_not_the_template() -> None:
    body = "    def forward(self, x):\n        return F.max_pool2d(x, 3)"
    assert traced_families(_reference("", body, "torch.randn(2, 3, 16, 16)", "")) == ()


def test_each_pools_parameters_are_its_templates_constructor() -> None:
    """The matcher binds the constructor's arguments as the template's ModelNew would: same names, order and
    defaults, read from the template sources."""
    import ast

    from kernelevolve.specs.traced_families import POOLS
    from kernelevolve.variation.template_library import load_templates

    templates = {t.family: t for t in load_templates("triton")}
    for family, pool in POOLS.items():
        tree = ast.parse(templates[family].source)
        model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
        init = next(n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        names = tuple(a.arg for a in init.args.args[1:])
        defaults = dict(zip(names[len(names) - len(init.args.defaults) :], init.args.defaults, strict=True))
        assert names == pool.parameters, family
        assert {k: ast.literal_eval(v) for k, v in defaults.items()} == dict(pool.defaults), family


@pytest.mark.parametrize(
    "forward",
    [
        "    def forward(self, Q, K, V):\n        out = torch.nn.functional.scaled_dot_product_attention(Q, K, V)\n        return out",
        "    def forward(self, query, key, value):\n        return F.scaled_dot_product_attention(query, key, value)",
    ],
)
def test_attention_is_recognised_before_the_dispatcher_decomposes_it(forward: str) -> None:
    inputs = "torch.randn(2, 4, 32, 16), torch.randn(2, 4, 32, 16), torch.randn(2, 4, 32, 16)"
    assert traced_families(_reference("", forward, inputs, "")) == ("sdpa",)
    causal = forward.replace("value)", "value, is_causal=True)").replace("V)", "V, is_causal=True)")
    assert traced_families(_reference("", causal, inputs, "")) == ()  # the templates have no causal mask
