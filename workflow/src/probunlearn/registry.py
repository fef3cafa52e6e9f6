"""Registries: the ways probunlearn grows (unlearning methods, scorers, benchmarks, attacks).

A :class:`Registry` maps names to entries of one kind. It is filled, on first use, by

1. the modules of its built-in package (every module there registers its entry when imported, so
   a new method, scorer or benchmark is one new file or folder), then
2. the Python entry points of the group ``probunlearn.<kind>`` of every installed distribution:
   ``my_method = my_package.my_module:METHOD`` names an entry (or a class, instantiated), so a
   researcher's own entry works in the workflow and in ``probunlearn evaluate`` without editing
   probunlearn (docs/extending.md).

Every list of choices (the config schema's, the CLI's, figure colours, model names) is read from
the registries, never written out by hand. Torch-free: registering imports no model code.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, Protocol, TypeVar


class Named(Protocol):
    name: str


T = TypeVar("T", bound=Named)

ENTRY_POINT_PREFIX = "probunlearn."

_ALL: list[Registry] = []


class Registry(Generic[T]):
    """Entries of one kind by name: the built-ins of ``package`` and the entry points of
    ``probunlearn.<kind>``; ``base`` is the type every entry must have, ``noun`` names one entry in
    messages."""

    def __init__(
        self,
        kind: str,
        package: str,
        base: type,
        noun: str,
        name_pattern: str = r".+",
        name_rule: str = "a non-empty name",
    ) -> None:
        self.kind = kind
        self.noun = noun
        self.package = package
        self.base = base
        self.name_pattern = re.compile(name_pattern)
        self.name_rule = name_rule
        self._entries: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._loaded = False
        self._loading = False
        _ALL.append(self)

    @property
    def group(self) -> str:
        """The entry-point group that registers outside entries."""
        return ENTRY_POINT_PREFIX + self.kind

    def register(self, entry: T | type, origin: str | None = None) -> T:
        """Add ``entry`` (an instance of ``base``, or a subclass of it, which is instantiated)
        under its ``name``; a second entry with the same name is an error that names both."""
        if isinstance(entry, type) and issubclass(entry, self.base):
            entry = entry()
        if not isinstance(entry, self.base):
            raise TypeError(
                f"a {self.noun} must be a {self.base.__name__}, got {type(entry).__name__}"
            )
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.noun} needs a non-empty string name, got {name!r}")
        origin = origin or type(entry).__module__
        if not self.name_pattern.fullmatch(name):
            raise ValueError(f"{self.noun} {name!r} (from {origin}): expected {self.name_rule}")
        if name in self._entries and self._origin[name] != origin:
            raise ValueError(
                f"{self.noun} {name!r} is registered twice: by {self._origin[name]} and by {origin}"
            )
        self._entries[name] = entry
        self._origin[name] = origin
        return entry

    def _load(self) -> None:
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            pkg = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(pkg.__path__, self.package + "."):
                if not info.name.rsplit(".", 1)[1].startswith("_"):
                    importlib.import_module(info.name)
            for ep in entry_points(group=self.group):
                try:
                    obj = ep.load()
                except Exception as e:  # noqa: BLE001 - say which plugin failed, then fail
                    raise ImportError(
                        f"the {self.noun} entry point {ep.name} = {ep.value} "
                        f"(group {self.group}) cannot be loaded: {e}"
                    ) from e
                self.register(obj, origin=f"entry point {ep.name} = {ep.value}")
            self._loaded = True
        finally:
            self._loading = False

    def rescan(self) -> None:
        """Read the entry points again (after installing a plugin in a running process); the
        built-in entries stay."""
        for name in [n for n, o in self._origin.items() if o.startswith("entry point ")]:
            del self._entries[name], self._origin[name]
        self._loaded = False

    def get(self, name: str) -> T:
        """The entry ``name``; a ValueError naming the known ones if there is none."""
        self._load()
        if name not in self._entries:
            raise ValueError(f"unknown {self.noun} {name!r}; expected one of {self.names()}")
        return self._entries[name]

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load()
        return sorted(self._entries)

    def origin(self, name: str) -> str:
        """Where an entry came from: its module, or the entry point that registered it."""
        self.get(name)
        return self._origin[name]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        self._load()
        return iter([self._entries[n] for n in sorted(self._entries)])

    def __len__(self) -> int:
        self._load()
        return len(self._entries)


def registries() -> list[Registry]:
    """Every registry made so far (those of the modules imported)."""
    return list(_ALL)


def rescan_all() -> None:
    """Read the entry points of every registry again (after a plugin is installed or removed in a
    running process): rescanning one registry leaves another that loaded meanwhile stale."""
    for registry in _ALL:
        registry.rescan()


# ---- an entry's settings: shared by methods and attacks -----------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting of a registered entry (a method's hyper-parameter, an attack's option): its
    default and its JSON-schema type (validated in the config, the command line and the job)."""

    default: Any
    schema: Mapping[str, Any]
    doc: str = ""


def schema_error(schema: Mapping[str, Any], value: Any) -> str | None:
    """What is wrong with ``value`` under a small JSON schema (type, bounds, enum), or None."""
    import jsonschema

    errors = list(jsonschema.Draft202012Validator(dict(schema)).iter_errors(value))
    return errors[0].message if errors else None


def resolve_settings(
    settings: Mapping[str, Setting],
    given: Mapping[str, Any],
    unknown: Callable[[list[str]], str],
    invalid: Callable[[str, Any, str], str],
) -> dict[str, Any]:
    """The defaults of ``settings`` updated with ``given``, each value checked against its schema;
    a ValueError with ``unknown(names)`` for settings there are none of, ``invalid(key, value,
    error)`` for a value its schema refuses."""
    extra = sorted(set(given) - set(settings))
    if extra:
        raise ValueError(unknown(extra))
    out = {k: s.default for k, s in settings.items()} | dict(given)
    for key, value in out.items():
        error = schema_error(settings[key].schema, value)
        if error:
            raise ValueError(invalid(key, value, error))
    return out
