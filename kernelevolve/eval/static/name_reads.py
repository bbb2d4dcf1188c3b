"""Attributes read by name without an Attribute node: match class patterns and namespace mappings.

The banned-attribute rules (``FRAME_ATTRS``, ``FILE_ATTRS``, computed ``getattr``) read ``x.attr`` and
``getattr(x, "attr")``. Python reads attributes by name in two more places, which would bypass them:

- a class pattern ``case C(attr=p)`` reads ``subject.attr``, and ``case C(p)`` reads the attribute that
  ``C.__match_args__`` names, which a candidate class (a computed ``__match_args__``, a dataclass made by
  ``make_dataclass`` from computed fields, a metaclass making any object match) can set to any name;
- ``X.__dict__`` is the namespace itself: ``type.__dict__["__sub" + "classes__"]``, or its ``.items()``
  searched for a name, is getattr with a computed name.

So keyword sub-patterns meet the same rules as attribute names; positional sub-patterns are allowed only
for the builtin types that match themselves (``case int(n)``) and for local classes whose
``__match_args__`` is a literal tuple of names (checked as attribute names); and a ``__dict__`` may be
read only by a literal name that is not a dunder (``self.__dict__.setdefault("_cache", {})``, the search's
own graph-replay rewrite), never wholesale or by a computed key.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from kernelevolve.eval.static.module import Module
from kernelevolve.eval.static.rules import FILE_ATTRS, FRAME_ATTRS

IssueSink = Callable[[str, ast.AST, str], None]

# Builtin classes whose class patterns take one positional sub-pattern: the subject itself
SELF_MATCHING = frozenset(
    [
        "bool",
        "bytearray",
        "bytes",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "set",
        "str",
        "tuple",
        "complex",
    ]
)
# A class's __match_args__ set from outside its body: the literal-names rule below would not see it
MATCH_ARGS_STORE = (
    "sets a class's __match_args__ outside its body: class patterns would read attributes by those names"
)
# Methods of a namespace mapping that read one entry by the key given as their first argument
_KEYED_READS = frozenset({"get", "setdefault", "pop", "__getitem__", "__contains__"})


def check_attribute_name(node: ast.AST, attr: str, issue: IssueSink) -> None:
    """The rules on an attribute's name, wherever the name is read (attribute, pattern keyword)."""
    if attr in FRAME_ATTRS:
        issue("introspection", node, f".{attr} walks frames, code objects or classes")
    if attr in FILE_ATTRS:
        issue("reference_access", node, f".{attr} maps, reads or writes files by path")
    if attr in ("Model", "get_inputs", "get_init_inputs"):
        issue("reference_access", node, f".{attr} reaches for the reference")
    if attr == "__dict__":
        issue("introspection", node, "a namespace read whole: attributes reached by names given as values")


def check_match_class(mod: Module, node: ast.MatchClass, issue: IssueSink) -> None:
    """A class pattern's attribute reads: keyword sub-patterns by their names, positional ones by the
    names the class's ``__match_args__`` gives."""
    for attr in node.kwd_attrs:
        check_attribute_name(node, attr, issue)
    if not node.patterns:
        return
    cls = node.cls.id if isinstance(node.cls, ast.Name) else None
    if cls in SELF_MATCHING and cls not in mod.classes and mod.resolve(node.cls) is None:
        return
    names = literal_match_args(mod.classes[cls]) if cls in mod.classes else None
    if names is None:
        issue(
            "dynamic_code",
            node,
            "a class pattern with positional sub-patterns reads the attributes its class's __match_args__ "
            "names, which the checks cannot see; use keyword sub-patterns (case C(attr=p))",
        )
        return
    for attr in names[: len(node.patterns)]:
        check_attribute_name(node, attr, issue)


def literal_match_args(cls: ast.ClassDef) -> list[str] | None:
    """A local class's ``__match_args__`` when its body sets it to a literal tuple of names and nothing
    else could have made it (no decorator, no base, no metaclass); None otherwise."""
    if cls.decorator_list or cls.bases or cls.keywords:
        return None
    found: list[str] | None = None
    for stmt in cls.body:
        if not isinstance(stmt, ast.Assign) or not any(
            isinstance(t, ast.Name) and t.id == "__match_args__" for t in stmt.targets
        ):
            continue
        value = stmt.value
        if not isinstance(value, (ast.Tuple, ast.List)):
            return None
        names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(names) != len(value.elts):
            return None
        found = names
    return found


def check_namespace_read(node: ast.Attribute, parents: dict[int, ast.AST], issue: IssueSink) -> None:
    """``X.__dict__`` read by a literal non-dunder key only (a subscript, or get/setdefault/pop)."""
    parent = parents.get(id(node))
    key: ast.AST | None = None
    if isinstance(parent, ast.Subscript) and parent.value is node:
        key = parent.slice
    elif isinstance(parent, ast.Attribute) and parent.attr in _KEYED_READS:
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent and call.args:
            key = call.args[0]
    literal = isinstance(key, ast.Constant) and isinstance(key.value, str) and not key.value.startswith("__")
    if not literal:
        issue(
            "introspection",
            node,
            "__dict__ read whole or by a computed or dunder key: attributes reached by names given as values "
            "(read it by a literal name, or name the attribute)",
        )
