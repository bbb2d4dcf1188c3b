"""Name -> factory registries; a wrong name raises at once and lists the valid ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it readable
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            return factory

        return decorate

    def names(self) -> list[str]:
        return sorted(self._factories)

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._factories[name]
        except KeyError:
            valid = ", ".join(self.names()) or "(none registered)"
            raise UnknownNameError(f"unknown {self.kind} {name!r}; valid names: {valid}") from None

    def create(self, name: str, **kwargs: object) -> T:
        return self.get(name)(**kwargs)
