"""Run time, blue-team round 9: a tuple subclass returned by a call (a `collections.namedtuple`, a
`typing.NamedTuple`) is read through tuple's own C iterator the moment the call returns, so the harness
walks the items the call returned and no method the candidate wrote runs on the way
(`tests/adversarial/hacks/namedtuple_lazy_items_right_shapes.py` is the attack through it)."""

from __future__ import annotations


def test_a_tuple_subclass_is_read_by_tuples_own_methods() -> None:
    """No method the candidate wrote runs when the runner walks a named tuple; the stored items come back."""
    import collections

    from kernelevolve.eval.timed_guard import plain_output_call, plain_tuples

    calls: list[str] = []

    class Lazy(collections.namedtuple("Base", ["a", "b"])):
        def __iter__(self):  # type: ignore[override]
            calls.append("iter")
            return iter(("computed", "computed"))

        def __getitem__(self, i):  # type: ignore[override]
            calls.append("getitem")
            return "computed"

        def __len__(self) -> int:
            calls.append("len")
            return 2

    out = plain_tuples([Lazy(1, (Lazy(2, 3), 4))])
    assert out == [(1, ((2, 3), 4))] and type(out[0]) is tuple and type(out[0][1][0]) is tuple
    assert plain_output_call(lambda: Lazy(5, 6))() == (5, 6)
    assert calls == []


def test_other_containers_are_left_for_the_checks() -> None:
    from kernelevolve.eval.timed_guard import plain_tuples

    class Items(list):
        pass

    odd = Items([1])
    assert plain_tuples(odd) is odd
    mapping = {"a": 1}
    assert plain_tuples((mapping,))[0] is mapping
