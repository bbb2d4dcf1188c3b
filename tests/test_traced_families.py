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


def _module(init: str, fields: str, forward: str, inputs: str, init_inputs: str) -> str:
    body = (fields or "        pass") + f"\n    def forward(self{forward}"
    return _reference(init, body, inputs, init_inputs, header="import math\n")


_RMS = ", dim, eps=1e-6", "        self.eps = eps\n        self.weight = nn.Parameter(torch.ones(dim))"
_LINEAR = ", i, o", "        self.linear = nn.Linear(i, o)"
_CHAIN = (
    ", dim",
    "        self.scale = nn.Parameter(torch.randn(dim))\n        self.bias = nn.Parameter(torch.randn(dim))",
)
_QKV = "torch.randn(2, 3, 10, 16), torch.randn(2, 3, 10, 16), torch.randn(2, 3, 10, 16)"


@pytest.mark.parametrize(
    ("family", "code"),
    [
        ("rmsnorm", _module(*_RMS, ", x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight", "torch.randn(2, 8, 64)", "64")),
        ("rmsnorm", _module(*_RMS, ", h):\n        return self.weight * (h / torch.sqrt((h * h).mean(dim=2, keepdim=True) + self.eps))", "torch.randn(2, 8, 64)", "64")),
        ("rmsnorm", _module(*_RMS, ", x):\n        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)", "torch.randn(8, 64)", "64")),
        ("rmsnorm", _module(*_RMS, ", x):\n        xf = x.float()\n        n = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)\n        return n.type_as(x) * self.weight", "torch.randn(8, 64, dtype=torch.bfloat16)", "64")),
        ("swiglu", _module("", "", ", x):\n        gate, up = x.chunk(2, dim=-1)\n        return F.silu(gate) * up", "torch.randn(8, 64)", "")),
        ("swiglu", _module("", "", ", x):\n        h = x.shape[-1] // 2\n        a, b = x[..., :h], x[..., h:]\n        return a * torch.sigmoid(a) * b", "torch.randn(8, 64)", "")),
        ("swiglu", _module("", "", ", x):\n        a, b = torch.split(x, 32, 1)\n        return b * F.silu(a)", "torch.randn(8, 64)", "")),
        ("layernorm", _module(", d", "        self.ln = nn.LayerNorm(d)", ", x):\n        return self.ln(x)", "torch.randn(8, 64)", "64")),
        ("layernorm", _module(", d", "        self.ln = nn.LayerNorm(d)", ", x):\n        return F.layer_norm(x, (64,), self.ln.weight, self.ln.bias)", "torch.randn(2, 8, 64)", "64")),
        ("log_softmax", _module("", "        self.f = nn.LogSoftmax(dim=-1)", ", x):\n        return self.f(x)", "torch.randn(8, 64)", "")),
        ("log_softmax", _module(", d", "        self.d = d", ", x):\n        return x.log_softmax(self.d)", "torch.randn(8, 64, 3)", "2")),
        ("batched_gemm", _module("", "", ", a, b):\n        return a @ b", "torch.randn(4, 8, 16), torch.randn(4, 16, 5)", "")),
        ("gemm_bias_relu", _module(*_LINEAR, ", x):\n        return F.relu(self.linear(x))", "torch.randn(2, 8, 64)", "64, 32")),
        ("gemm_bias_relu", _module(*_LINEAR, ", x):\n        return (x @ self.linear.weight.T + self.linear.bias).clamp(min=0)", "torch.randn(8, 64)", "64, 32")),
        ("elementwise_chain", _module(*_CHAIN, ", x):\n        return torch.sigmoid(x) * F.gelu(self.bias + self.scale * x)", "torch.randn(8, 64)", "64")),
        ("dot_interaction", _module("", "", ", f):\n        n = f.shape[1]\n        idx = torch.triu_indices(n, n, 1)\n        return (f @ f.permute(0, 2, 1))[:, idx[0], idx[1]]", "torch.randn(4, 6, 8)", "")),
        ("sdpa", _module("", "", ", q, k, v):\n        return torch.softmax(q @ k.transpose(2, 3) / math.sqrt(q.shape[-1]), dim=-1) @ v", _QKV, "")),
    ],
)  # fmt: skip
def test_a_layer_of_several_ops_is_one_program_however_written(family: str, code: str) -> None:
    assert traced_families(code) == (family,)


@pytest.mark.parametrize(
    "code",
    [
        _module(", dim", "        self.weight = nn.Parameter(torch.ones(dim))", ", x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight", "torch.randn(8, 64)", "64"),  # another eps than ModelNew(dim)'s
        _module("", "", ", x):\n        gate, up = x.chunk(2, dim=-1)\n        return F.silu(up) * gate", "torch.randn(8, 64)", ""),  # the other half gates
        _module(", d", "        self.norm = nn.LayerNorm(d)", ", x):\n        return self.norm(x)", "torch.randn(8, 64)", "64"),  # weights the template cannot take
        _module(", i, o", "        self.linear = nn.Linear(i, o, bias=False)", ", x):\n        return F.relu(self.linear(x))", "torch.randn(8, 64)", "64, 32"),
        _module("", "", ", a, b):\n        return torch.matmul(a, b)", "torch.randn(4, 8, 16), torch.randn(1, 16, 5)", ""),  # a broadcast
        _module("", "", ", x):\n        return x.log_softmax(0)", "torch.randn(8, 64)", ""),
        _module(*_CHAIN, ", x):\n        return torch.sigmoid(x) * F.gelu(self.bias + self.scale * x, approximate='tanh')", "torch.randn(8, 64)", "64"),
        _module("", "", ", f):\n        n = f.shape[1]\n        idx = torch.tril_indices(n, n, -1)\n        return (f @ f.permute(0, 2, 1))[:, idx[0], idx[1]]", "torch.randn(4, 6, 8)", ""),
        _module("", "", ", q, k, v):\n        return torch.softmax(q @ k.transpose(2, 3) / 2.0, dim=-1) @ v", _QKV, ""),  # another scale
        _module("", "", ", q, k, v):\n        return torch.softmax(q @ k / 4.0, dim=-1) @ v", _QKV.replace("10, 16", "16, 16"), ""),
    ],
)  # fmt: skip
def test_the_layer_computing_something_else_or_holding_other_state_is_not_the_template(code: str) -> None:
    assert traced_families(code) == ()


def test_coarse_tags_come_from_the_program_not_the_name() -> None:
    """The hints past wins and knowledge-base queries use (gemm, pooling, attention, ...)."""
    product = _reference(
        "",
        "    def forward(self, a, b):\n        return torch.relu(a @ b)",
        "torch.randn(8, 16), torch.randn(16, 4)",
        "",
    )
    assert problem_tags(Problem(2, 999, "999_anything", product)) == ("gemm",)
    relu = _reference("", "    def forward(self, x):\n        return torch.relu(x)", "torch.randn(8, 64)", "")
    assert problem_tags(Problem(3, 1, "1_Matmul_Conv_AvgPool_LayerNorm_Attention_MSELoss", relu)) == ()
    pooled = _reference(
        "", "    def forward(self, x):\n        return x.mean(dim=(2, 3))", "torch.randn(2, 3, 8, 8)", ""
    )
    assert "pooling" in problem_tags(Problem(2, 5, "5_x", pooled))  # a global average pool
    attention = _module(
        "",
        "",
        ", q, k):\n        return torch.softmax(q @ k.transpose(-2, -1), -1) @ k",
        "torch.randn(2, 3, 10, 16), torch.randn(2, 3, 10, 16)",
        "",
    )
    assert "attention" in problem_tags(Problem(3, 9, "9_x", attention))
