"""Kernels kept as modules (kernelevolve/variation/kernels/): well-formed, rendered without their scaffolding,
and to the text their string literals had."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kernelevolve
from kernelevolve.variation.kernels import (
    KernelModuleError,
    kernel_names,
    kernel_source,
    kernel_tunables,
    module_text,
    render_module,
)
from kernelevolve.variation.tunables import find_tunables
from tests.kernel_goldens import GOLDENS, cases

_CASES = cases()
_STAND_IN = ("# ke:stand-in begin\n", "# ke:stand-in end\n")


@pytest.mark.parametrize("name", sorted(_CASES))
def test_renders_as_the_string_literals_did(name: str) -> None:
    assert _CASES[name] == (GOLDENS / f"{name}.txt").read_text()


def test_every_golden_is_a_case() -> None:
    assert sorted(p.stem for p in GOLDENS.glob("*.txt")) == sorted(_CASES)


def test_the_kernel_modules_are_shipped() -> None:
    assert {"gemm", "conv", "attention", "encoder", "elementwise", "recurrent", "tanh"} <= set(kernel_names())


@pytest.mark.parametrize("name", kernel_names())
def test_a_module_renders_to_its_code_alone(name: str) -> None:
    text = module_text(name)
    module = ast.parse(text)
    assert ast.get_docstring(module), "a kernel module says what it is and who pastes it in"
    assert "\n# fmt: off\n" in text, "ruff format would change the code candidates get"
    code = kernel_source(name)
    body = ast.parse(code).body
    assert body and not any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body)
    assert "# ke:" not in code and "# fmt: off" not in code and "# ruff: noqa" not in code
    assert not code.startswith("\n") and code.endswith("\n") and not code.endswith("\n\n")


@pytest.mark.parametrize("name", kernel_names())
def test_stand_ins_are_used_and_left_to_the_candidate(name: str) -> None:
    """A stand-in defines, for the checkers, only names the code uses and does not define itself."""
    text = module_text(name)
    code = ast.parse(kernel_source(name))
    defined = {
        t.id for s in code.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
    }
    defined |= {s.name for s in code.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    used = {n.id for n in ast.walk(code) if isinstance(n, ast.Name)}
    begin, end = _STAND_IN
    while begin in text:
        section, text = text.split(begin, 1)[1].split(end, 1)
        for statement in ast.parse(section).body:
            names = [
                t for t in ast.walk(statement) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
            ]
            assert names, f"{name}.py: a stand-in defines nothing: {ast.unparse(statement)}"
            for stand_in in names:
                assert stand_in.id in used and stand_in.id not in defined, (name, stand_in.id)


@pytest.mark.parametrize("name", kernel_names())
def test_tunables_are_declared_with_their_choices(name: str) -> None:
    lines = kernel_tunables(name)
    declared = [t.name for t in find_tunables("\n".join(lines)) if t.declared]
    assignments = [line for line in lines if not line.startswith("#")]
    assert len(declared) == len(assignments)


def test_kernels_are_no_longer_string_literals() -> None:
    """Python code with Triton in it, of eight lines or more, is a kernel module, not a string."""
    package = Path(kernelevolve.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if {"kernels", "templates"} & set(path.relative_to(package).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if node.value.count("\n") >= 7 and ("tl." in node.value or "@triton" in node.value):
                try:
                    ast.parse(node.value)
                except SyntaxError:
                    continue  # prose: a docstring about kernels
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not found


def _render(text: str) -> str:
    return render_module(text, "probe", kernel_source)[0]


def test_rendering_drops_scaffolding_and_pastes_includes() -> None:
    text = (
        '"""Doc."""\n# fmt: off\n\nimport triton\n\n# ke:stand-in begin\nX = 1\n# ke:stand-in end\n\n'
        "# ke:tunables begin\nBLOCK = 4  # tune: 4, 8\n# ke:tunables end\n\n# ke:include tanh\n\n\n"
        "def f():\n    return X\n"
    )
    code, tunables = render_module(text, "probe", kernel_source)
    assert code == kernel_source("tanh") + "\n\ndef f():\n    return X\n"
    assert tunables == ("BLOCK = 4  # tune: 4, 8",)


@pytest.mark.parametrize(
    "text",
    [
        "# ke:stand-in begin\nX = 1\n",  # no end
        "X = 1\n# ke:stand-in end\n",  # no begin
        "# ke:stand-in begin\n# ke:tunables begin\n# ke:tunables end\n# ke:stand-in end\nX = 1\n",  # nested
        "# ke:stand-in begin\n# ke:include tanh\n# ke:stand-in end\nX = 1\n",  # an include in a section
        "# ke:standin begin\nX = 1\n# ke:standin end\n",  # misspelt
        "# ke:include no_such_module\nX = 1\n",
        '"""Only a docstring."""\nimport torch\n',
    ],
)
def test_malformed_modules_are_refused(text: str) -> None:
    with pytest.raises(KernelModuleError):
        _render(text)
