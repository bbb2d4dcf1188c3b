"""Name -> factory registries; a wrong name raises at once and lists the valid ones.

A registry with an entry point `group` also holds the factories installed packages declare there
(`[project.entry-points."<group>"]`, name = factory): each is imported the first time its name is asked
for, so a plug-in costs nothing until used and one that cannot be imported fails with one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")


class UnknownNameError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it readable
        return str(self.args[0])


class PluginUnavailableError(ImportError):
    """A name an installed package declares whose module cannot be imported (a part not installed)."""


class Registry(Generic[T]):
    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            return factory

        return decorate

    def names(self) -> list[str]:
        return sorted({*self._factories, *self._declared()})

    def get(self, name: str) -> Callable[..., T]:
        if name not in self._factories:
            point = self._declared().get(name)
            if point is not None:
                self._factories[name] = self._load(point)
        try:
            return self._factories[name]
        except KeyError:
            valid = ", ".join(self.names()) or "(none registered)"
            raise UnknownNameError(f"unknown {self.kind} {name!r}; valid names: {valid}") from None

    def create(self, name: str, **kwargs: object) -> T:
        return self.get(name)(**kwargs)

    def load_entry_points(self) -> list[str]:
        """Import every factory the group declares now; returns the names added. One already registered
        keeps its factory."""
        added = []
        for name, point in self._declared().items():
            if name not in self._factories:
                self._factories[name] = self._load(point)
                added.append(name)
        return added

    def _declared(self) -> dict[str, EntryPoint]:
        if self.group is None:
            return {}
        from importlib.metadata import entry_points

        declared = {point.name: point for point in entry_points(group=self.group)}
        for name, point in _source_tree_entry_points(self.group).items():
            declared.setdefault(name, point)
        return declared

    def _load(self, point: EntryPoint) -> Callable[..., T]:
        try:
            factory: Callable[..., T] = point.load()
        except ImportError as exc:
            raise PluginUnavailableError(
                f"{self.kind} {point.name!r} ({point.value}, declared by an installed package) cannot be "
                f"imported: {exc}"
            ) from exc
        return factory


def _source_tree_entry_points(group: str) -> dict[str, EntryPoint]:
    """The group's entry points from the checkout's pyproject.toml, where kernelevolve runs from a source
    tree it was never installed from (`python -m kernelevolve` in a clone, a GPU machine given the working
    tree): installed metadata is what declares them otherwise."""
    from importlib.metadata import EntryPoint, PackageNotFoundError, distribution
    from pathlib import Path

    try:
        installed = distribution("kernelevolve")
        if Path(str(installed.locate_file("kernelevolve"))).resolve() == Path(__file__).resolve().parent:
            return {}
    except PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        import tomllib
    except ImportError:  # Python 3.10: only an install declares entry points
        return {}
    try:
        table = tomllib.loads(pyproject.read_text())["project"]["entry-points"].get(group, {})
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return {}
    return {name: EntryPoint(name, value, group) for name, value in table.items()}
