"""Triton expressions for the IR's pointwise functions (fp32 math, int1 for booleans).

Triton's core language has no tanh, log1p or expm1; we use formulations built from exp/log/sigmoid
whose absolute error stays near fp32 epsilon, well inside the 1e-4 tolerance of the checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kernelevolve.variation.codegen.ir import Op, Operand

NAN_ALL = "propagate_nan=tl.PropagateNan.ALL"

_ARITH: dict[str, str] = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "neg": "-{0}",
    "abs": "tl.abs({0})",
    "exp": "tl.exp({0})",
    "exp2": "tl.exp2({0})",
    "expm1": "(tl.exp({0}) - 1.0)",
    "log": "tl.log({0})",
    "log2": "tl.log2({0})",
    "log10": "(tl.log({0}) * 0.4342944819032518)",
    "log1p": "tl.log(1.0 + {0})",
    "sqrt": "tl.sqrt({0})",
    "rsqrt": "tl.rsqrt({0})",
    "reciprocal": "(1.0 / {0})",
    "sigmoid": "tl.sigmoid({0})",
    "tanh": "(2.0 * tl.sigmoid(2.0 * {0}) - 1.0)",
    "erf": "tl.erf({0})",
    "sin": "tl.sin({0})",
    "cos": "tl.cos({0})",
    "floor": "tl.floor({0})",
    "ceil": "tl.ceil({0})",
    "trunc": "tl.where({0} < 0, tl.ceil({0}), tl.floor({0}))",
    "round": "tl.where(tl.floor({0} + 0.5) - {0} == 0.5, 2.0 * tl.floor(({0} + 0.5) * 0.5), tl.floor({0} + 0.5))",
    "sign": "tl.where({0} > 0, 1.0, tl.where({0} < 0, -1.0, 0.0))",
    "maximum": "tl.maximum({0}, {1}, " + NAN_ALL + ")",
    "minimum": "tl.minimum({0}, {1}, " + NAN_ALL + ")",
    "copy": "{0}",
    "to_float": "{0}",
    "round_float16": "{0}.to(tl.float16).to(tl.float32)",
    "round_bfloat16": "{0}.to(tl.bfloat16).to(tl.float32)",
}
_COMPARE: dict[str, str] = {
    "gt": "{0} > {1}",
    "lt": "{0} < {1}",
    "ge": "{0} >= {1}",
    "le": "{0} <= {1}",
    "eq": "{0} == {1}",
    "ne": "{0} != {1}",
    "isnan": "{0} != {0}",
    "isinf": "tl.abs({0}) == float('inf')",
}
_LOGIC: dict[str, str] = {
    "not": "{0} == 0",
    "and": "{0} & {1}",
    "or": "{0} | {1}",
    "xor": "{0} ^ {1}",
    "to_bool": "{0} != 0",
}

SUPPORTED = set(_ARITH) | set(_COMPARE) | set(_LOGIC) | {"pow", "where"}


def literal(value: Operand) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, int):
        return f"{value}.0"
    raise ValueError(f"not a literal: {value!r}")


def _pow(base: str, exponent: Operand, base_literal: Operand = None) -> str:
    if base_literal is not None and isinstance(base_literal, (int, float)) and base_literal > 0:
        return f"tl.exp2({exponent} * {math.log2(base_literal)!r})"
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        e = float(exponent)
        simple = {
            1.0: "{0}",
            2.0: "({0} * {0})",
            3.0: "({0} * {0} * {0})",
            4.0: "(({0} * {0}) * ({0} * {0}))",
            -1.0: "(1.0 / {0})",
            -2.0: "(1.0 / ({0} * {0}))",
            0.5: "tl.sqrt({0})",
            -0.5: "tl.rsqrt({0})",
            0.0: "({0} * 0.0 + 1.0)",
        }
        if e in simple:
            return simple[e].format(base)
        magnitude = f"tl.exp2({e!r} * tl.log2(tl.abs({base})))"
        if e.is_integer():
            if int(e) % 2:
                return f"tl.where({base} < 0, -{magnitude}, {magnitude})"
            return magnitude
        return f"tl.exp2({e!r} * tl.log2({base}))"
    return f"tl.exp2({exponent} * tl.log2({base}))"


def op_expr(op: Op, ref: Callable[[str], str], is_bool: Callable[[Operand], bool]) -> str:
    """Triton expression for a pointwise op; `ref` names an operand value in the kernel."""

    def num(x: Operand) -> str:
        if not isinstance(x, str):
            return literal(x)
        return f"{ref(x)}.to(tl.float32)" if is_bool(x) else ref(x)

    def flag(x: Operand) -> str:
        if not isinstance(x, str):
            return "1" if x else "0"
        return ref(x) if is_bool(x) else f"({ref(x)} != 0)"

    fn, args = op.fn, op.args
    if fn in _ARITH:
        return "(" + _ARITH[fn].format(*[num(a) for a in args]) + ")"
    if fn in _COMPARE:
        return "(" + _COMPARE[fn].format(*[num(a) for a in args]) + ")"
    if fn in _LOGIC:
        return "(" + _LOGIC[fn].format(*[flag(a) for a in args]) + ")"
    if fn == "pow":
        base, exponent = args
        if not isinstance(base, str):
            return _pow(literal(base), num(exponent), base)
        if isinstance(exponent, str):
            return _pow(num(base), num(exponent))
        return _pow(num(base), exponent)
    if fn == "where":
        cond, a, b = args
        if op.is_bool:
            return f"tl.where({flag(cond)}, {flag(a)}, {flag(b)})"
        return f"tl.where({flag(cond)}, {num(a)}, {num(b)})"
    raise ValueError(f"no Triton expression for {fn!r}")
