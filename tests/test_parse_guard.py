"""`ast.parse` in several threads at once: serialised on the CPython releases where it races."""

from __future__ import annotations

import ast
import threading
import time

import pytest

import kernelevolve  # noqa: F401 - installs the guard where this interpreter needs it
from kernelevolve.eval import parse_guard

_SOURCE = "\n".join(
    f"def f{i}(x):\n    return [a + b * {i} for a, b in zip(x, x) if a > b]" for i in range(100)
)


def test_the_racing_releases_are_the_ones_before_the_fix() -> None:
    assert parse_guard.races((3, 11, 7)) and parse_guard.races((3, 12, 1)) and parse_guard.races((3, 11, 0))
    assert not any(parse_guard.races(v) for v in [(3, 10, 13), (3, 11, 8), (3, 12, 2), (3, 13, 0)])


needs_race = pytest.mark.skipif(not parse_guard.races(), reason="this CPython's ast.parse does not race")


@needs_race
def test_a_parse_waits_while_another_thread_is_parsing() -> None:
    assert getattr(ast.parse, parse_guard._MARK, False)
    parse_guard.serialise_parsing()  # a second install wraps nothing twice
    assert not getattr(ast.parse.__wrapped__, parse_guard._MARK, False)  # type: ignore[attr-defined]
    done = threading.Event()
    with parse_guard._LOCK:  # as if this thread were inside a parse
        other = threading.Thread(target=lambda: (ast.parse("x = 1"), done.set()))
        other.start()
        assert not done.wait(0.3)
        assert ast.parse("y = 2")  # re-entrant: a finalizer parsing inside a parse does not deadlock
    assert done.wait(5)
    other.join()


class _Cycle:
    """Garbage whose collection, inside another parse, lets the other threads run (the race's trigger)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0.0001)


@needs_race
def test_threads_parsing_under_collections_that_switch_threads_never_fail() -> None:
    failures: list[str] = []

    def parse_repeatedly() -> None:
        for _ in range(60):
            for _ in range(20):
                _Cycle()
            try:
                ast.parse(_SOURCE)
            except SystemError as exc:  # "AST constructor recursion depth mismatch" without the guard
                failures.append(str(exc))

    threads = [threading.Thread(target=parse_repeatedly) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
