"""One source-ordered pass over a call-path function: its statements.

The expression side (kinds of values, PyTorch compute, stores) is ``values.Values``; this
adds the statement rules. ``try_except_fallback``: in the call path, a bare ``except``, a handler
that computes in PyTorch (or calls the reference / a helper that does), or a handler that swallows
a failure of the kernel work without re-raising. ``state_between_calls``: ``global`` statements
(never in ``__init__``), mutable default arguments, storing the tensor that forward returns, and
returning a tensor held on self or in a module-level container. ``returns_input``: forward returns
one of its inputs or a view of one.
"""

from __future__ import annotations

import ast

from kernelevolve.eval.static.counters import is_counter_step
from kernelevolve.eval.static.kinds import EMPTY, A, D, F, Kinds, S, T
from kernelevolve.eval.static.module import callee_name, positional
from kernelevolve.eval.static.rules import AUTOCAST, SCOPED_CONTEXTS
from kernelevolve.eval.static.values import Values


class Flow(Values):
    """One source-ordered pass over a call-path function, tracking what each local name may hold."""

    def run(self) -> Kinds:
        for default in [*self.node.args.defaults, *self.node.args.kw_defaults]:
            if isinstance(default, (ast.Dict, ast.List, ast.Set)) or (
                isinstance(default, ast.Call) and callee_name(default.func) in ("dict", "list", "set")
            ):
                self.c.issue(
                    "state_between_calls",
                    default,
                    f"{self.node.name}: a mutable default argument keeps state between calls",
                )
        self._block(self.node.body)
        if self.is_forward:
            for name in sorted(self.returned & set(self.stored)):
                self.c.issue(
                    "state_between_calls",
                    self.stored[name],
                    f"forward keeps its output {name!r} for later calls",
                )
        return self.returns

    # ---- statements ---------------------------------------------------------------------------

    def _block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self._stmt(stmt)

    def _stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            kinds = self.kinds(s.value)
            for target in s.targets:
                self._bind(target, kinds, s.value, s)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self._bind(s.target, self.kinds(s.value), s.value, s)
        elif isinstance(s, ast.AugAssign):
            value, current = self.kinds(s.value), self.kinds(s.target)
            counter = (
                isinstance(s.op, ast.Add)
                and D not in current
                and is_counter_step(s.target, s.value, self._is_self)
            )
            if not counter and (isinstance(s.op, ast.MatMult) or T in value | current):
                self.compute(s, "in-place tensor arithmetic")
            self._on_host(s, value | current, "in-place arithmetic")
            self._bind(s.target, (current | value) - {F}, s.value, s)
        elif isinstance(s, ast.Return):
            self._return(s)
        elif isinstance(s, ast.Assert):
            self.truth(s.test)
            self.kinds(s.msg)
        elif isinstance(s, (ast.Expr, ast.Raise)):
            for child in ast.iter_child_nodes(s):
                self.kinds(child)
        elif isinstance(s, (ast.If, ast.While)):
            self.truth(s.test)
            if isinstance(s, ast.If) and is_empty_passthrough(s):
                self._return(s.body[0], empty=True)  # type: ignore[arg-type]
            else:
                self._block(s.body)
            self._block(s.orelse)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self._bind(s.target, self.kinds(s.iter), None, s)
            held = self._held_modules(s.iter)
            if held is not None and isinstance(s.target, ast.Name):
                self.module_vars[s.target.id] = held  # for layer in self.layers: its modules
            self._block(s.body)
            self._block(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                kinds = self._context(item.context_expr)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, kinds, None, s)
            self._block(s.body)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            self._try(s)  # type: ignore[arg-type]
        elif isinstance(s, ast.Global):
            if not self.is_init:
                self.c.issue(
                    "state_between_calls",
                    s,
                    f"global {', '.join(s.names)}: module state rebound from the call path",
                )
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if id(s) not in self.mod.device_defs:
                saved, saved_tuples = dict(self.env), dict(self.tuples)
                given = self.c.closure_params.get(id(s), {})  # a closure a factory returns: its calls' kinds
                self.env.update({a: given.get(a, EMPTY) for a in positional(s)})
                for param in positional(s):
                    self.tuples.pop(param, None)
                self._block(s.body)
                self.env, self.tuples = saved, saved_tuples
        elif isinstance(s, ast.Match):
            subject = self.kinds(s.subject)
            for case in s.cases:
                self._pattern(case.pattern, subject)
                if case.guard is not None:
                    self.truth(case.guard)
                self._block(case.body)

    def _pattern(self, p: ast.pattern, kinds: Kinds) -> None:
        """A match pattern's captures hold what the subject holds (its parts, its attributes): a capture is
        an assignment, and a name it binds must not lose what the subject was."""
        if isinstance(p, (ast.MatchAs, ast.MatchStar)) and p.name is not None:
            self.env[p.name] = kinds
            self.tuples.pop(p.name, None)
        if isinstance(p, ast.MatchAs) and p.pattern is not None:
            self._pattern(p.pattern, kinds)
        elif isinstance(p, ast.MatchValue):
            self.kinds(p.value)
        elif isinstance(p, (ast.MatchOr, ast.MatchSequence)):
            for sub in p.patterns:
                self._pattern(sub, kinds)
        elif isinstance(p, ast.MatchMapping):
            for key, sub in zip(p.keys, p.patterns, strict=True):
                self.kinds(key)
                self._pattern(sub, kinds)
            if p.rest is not None:
                self.env[p.rest] = kinds
        elif isinstance(p, ast.MatchClass):
            for sub in p.patterns:
                self._pattern(sub, kinds)
            for attr, sub in zip(p.kwd_attrs, p.kwd_patterns, strict=True):
                self._pattern(sub, self._member(kinds, attr))

    def _return(self, s: ast.Return, empty: bool = False) -> None:
        """`empty`: the `if x.numel() == 0: return x` guard (`is_empty_passthrough`)."""
        if s.value is None:
            return  # a bare return: unpacking its None would fail, so it leaves the tuple shape alone
        if isinstance(s.value, (ast.Tuple, ast.List)) and not any(
            isinstance(x, ast.Starred) for x in s.value.elts
        ):
            shape = tuple(self.kinds(x) for x in s.value.elts)
            kinds = frozenset().union(*shape)
            self.return_shapes.append(shape)
        else:
            kinds = self.kinds(s.value)
            self.return_shapes.append(self.shape_of(s.value))
        self.returns |= kinds
        if not self.is_forward:
            return
        parts = s.value.elts if isinstance(s.value, (ast.Tuple, ast.List)) else [s.value]
        self.returned.update(p.id for p in parts if isinstance(p, ast.Name))
        if A in kinds and not empty:
            self.c.issue(
                "returns_input", s, "forward returns one of its inputs (or a view of it); return a new tensor"
            )
        if S in kinds:
            self.c.issue(
                "state_between_calls",
                s,
                "forward returns a tensor kept between calls (on self or in a module-level container); "
                "allocate the output afresh on every call",
            )

    def _context(self, e: ast.expr) -> Kinds:
        """A `with` item: a scoped switch (`rules.SCOPED_CONTEXTS`, autocast turned off) computes nothing;
        its arguments are still read (a mode taken from tensor data is a host read)."""
        if isinstance(e, ast.Call) and scoped_context(self.mod.resolve(e.func), e):
            for arg in [*e.args, *(k.value for k in e.keywords)]:
                self.truth(arg)
            return EMPTY
        if isinstance(e, ast.IfExp):  # `nvtx.range(...) if x.is_cuda else contextlib.nullcontext()`
            self.truth(e.test)
            return self._context(e.body) | self._context(e.orelse)
        return self.kinds(e)

    def _held_modules(self, e: ast.expr) -> tuple[str, ...] | None:
        """`self.<attr>`, a container of local modules (`static.module_lists`): their classes."""
        if not (isinstance(e, ast.Attribute) and self._is_self(e.value) and self.owner is not None):
            return None
        return self.c.module_lists.get(self.owner, {}).get(e.attr)

    def _try(self, s: ast.Try) -> None:
        launches, local_calls = self.c.launches, self.local_calls
        self._block(s.body)
        did_work = self.c.launches > launches or self.local_calls > local_calls
        for handler in s.handlers:
            if handler.type is None:
                self.c.issue("try_except_fallback", handler, "bare except on ModelNew's call path")
            if handler.name:
                self.env[handler.name] = EMPTY
            before = self.compute_events
            self._block(handler.body)
            if self.compute_events > before:
                self.c.issue(
                    "try_except_fallback", handler, "exception handler falls back to PyTorch / the reference"
                )
            elif did_work and not (handler.body and isinstance(handler.body[-1], ast.Raise)):
                self.c.issue(
                    "try_except_fallback", handler, "exception handler swallows a failure of the kernel work"
                )
        self._block(s.orelse)
        self._block(s.finalbody)


def scoped_context(name: str | None, call: ast.Call) -> bool:
    """Whether a call used as a `with` item is a switch scoped to its block that computes nothing."""
    if name in SCOPED_CONTEXTS:
        return True
    enabled = [k.value for k in call.keywords if k.arg == "enabled"]
    off = len(enabled) == 1 and isinstance(enabled[0], ast.Constant) and enabled[0].value is False
    return name in AUTOCAST and off


def is_empty_passthrough(s: ast.If) -> bool:
    """`if x.numel() == 0: return x` (or `not x.numel()`): the input handed back only when it holds no
    element, so nothing of it can be mistaken for a result (the runner's aliasing check stands)."""
    body = s.body
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Name):
        return False
    name, test = body[0].value.id, s.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call = test.operand
    elif (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == 0
        and test.comparators[0].value is not False
    ):
        call = test.left
    else:
        return False
    return (
        isinstance(call, ast.Call)
        and not call.args
        and not call.keywords
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "numel"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
    )
