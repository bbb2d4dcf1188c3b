"""The harness's helpers free what they hold when their callers let go, without a garbage collection.

A nested function that calls itself is a reference cycle (function, closure cell, function), and everything
it closes over lives until the collector finds the cycle: the judge kept every trial's guarded inputs and
output slots (input-sized, on the device) that way, and a runner, which collects nothing outside candidate
code (`own_work.pause_collector`), kept its outputs for good (session 36's level-1 out-of-memory errors).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import torch

from kernelevolve.eval import argument_structure, remote, runner_outputs, tensor_guards, timed_guard

PACKAGE = Path(__file__).resolve().parents[1] / "kernelevolve"


def _self_calling_nested_functions(source: str) -> list[str]:
    found = []
    for outer in ast.walk(ast.parse(source)):
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for inner in ast.walk(outer):
            if inner is outer or not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if any(isinstance(n, ast.Name) and n.id == inner.name for n in ast.walk(inner)):
                found.append(f"{inner.lineno}: {inner.name}")
    return found


def test_no_nested_function_calls_itself() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := _self_calling_nested_functions(path.read_text()))
    }
    assert not offenders, f"recursive nested functions (make them module-level): {offenders}"


def test_the_rule_finds_a_self_calling_nested_function() -> None:
    source = "def outer(xs):\n    def walk(x):\n        return [walk(y) for y in x]\n    return walk(xs)\n"
    assert _self_calling_nested_functions(source) == ["2: walk"]
    assert _self_calling_nested_functions("def f(x):\n    return f(x)\n") == []


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_guarded_inputs_are_freed_with_their_caller_s_references() -> None:
    with _collector_off():
        placed, guards = tensor_guards.guard_inputs([torch.ones(64), [torch.ones(3, 5)]])
        watched = [weakref.ref(guards[0]), weakref.ref(guards[1]), weakref.ref(placed[1][0])]
        del placed, guards
        assert [ref() for ref in watched] == [None, None, None]


def test_rebuilt_outputs_free_their_slots_with_the_caller_s_references() -> None:
    output = (torch.ones(4), [torch.zeros(2, 2), 3])
    leaves, _ = runner_outputs.describe(output, [])
    with _collector_off():
        slots = [torch.empty(4), torch.empty(2, 2)]
        watched = [weakref.ref(slot) for slot in slots]
        rebuilt = remote.rebuild_output(leaves, slots, [])
        assert rebuilt[1][1] == 3
        del slots, rebuilt
        assert [ref() for ref in watched] == [None, None]


def test_the_runners_walks_keep_nothing_they_were_handed() -> None:
    with _collector_off():
        outputs = [torch.ones(3), (torch.ones(2),)]
        watched = [weakref.ref(outputs[0]), weakref.ref(outputs[1][0])]
        described, tensors = runner_outputs.describe(outputs, [])
        leaves = timed_guard._plain_leaves(outputs, call=0)
        arguments = argument_structure.rebuild_arguments(
            [{"leaf": 0}, {"kind": "tuple", "items": [{"leaf": 1}]}], leaves
        )
        assert len(described) == 4 and len(arguments) == 2
        del outputs, tensors, leaves, arguments
        assert [ref() for ref in watched] == [None, None]
