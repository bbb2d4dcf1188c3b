"""`--shard K/N` (tests/conftest.py): a GPU preflight split over device calls must run every test once."""

from __future__ import annotations

from tests.conftest import shard_of


def test_the_parts_cover_every_test_once_and_do_not_depend_on_order() -> None:
    ids = [f"tests/test_{name}.py::case[{n}]" for name in ("a", "b", "c") for n in range(7)]
    parts = [shard_of(ids, k, 3) for k in (1, 2, 3)]
    assert sorted(id_ for part in parts for id_ in part) == sorted(ids)
    assert all(abs(len(part) - len(ids) / 3) < 1 for part in parts)
    assert shard_of(list(reversed(ids)), 2, 3) == parts[1]
    assert {id_.split("::")[0] for id_ in parts[0]} == {
        "tests/test_a.py",
        "tests/test_b.py",
        "tests/test_c.py",
    }
