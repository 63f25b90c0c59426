"""An import hook that fixes modules in memory, so verification never touches a file.

:class:`FixingFinder` sits first on ``sys.meta_path``. For a module in scope it
asks the other finders where the module lives, reads the original source,
passes it through a *transform* ``(source, filename) -> source`` and compiles
the result under the ORIGINAL filename. Dynamo, tracebacks and coverage then
name the real file (at the fixed text's line numbers; ``linecache`` is primed
with the fixed text so printed source lines match them).

The transform is injectable: the CLI uses :class:`LinterTransform` (all the
fixes ``graphmend-lint --fix`` would apply), rollback replays known texts with
:class:`ReplaceTransform`, and tests pass hand-written rewrites. Every
transform must be picklable: it travels to the arm subprocess.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphmend_lint.analysis.scope import Seed
    from graphmend_lint.config import Settings

#: ``(source, filename) -> new source``. Must be picklable.
Transform = Callable[[str, str], str]


def identity(source: str, filename: str) -> str:
    """The original arm's transform: compile the module as it is on disk."""
    return source


@dataclass
class LinterTransform:
    """Apply every fix graphmend-lint would apply with these settings.

    ``seeds`` maps each scope filename to what the linter treats as compiled
    in it: the target's callable and the calls other scope modules make into
    it (see :func:`graphmend_lint.verify.static.settle`).
    ``applied`` records the codes fixed per filename, and ``held_back`` the
    codes of findings whose fix needs ``--unsafe-fixes`` that was not given,
    so the arm can report both; they are filled in the process that runs the
    transform.
    """

    settings: Settings
    unsafe: bool = False
    seeds: Mapping[str, tuple[Seed, ...]] = field(default_factory=dict)
    applied: dict[str, tuple[str, ...]] = field(default_factory=dict)
    held_back: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __call__(self, source: str, filename: str) -> str:
        from graphmend_lint.verify.static import fix_text, needs_unsafe

        result = fix_text(source, filename, self.settings, self.unsafe, self.seeds.get(filename, ()))
        self.applied[filename] = tuple(d.code for d in result.applied)
        self.held_back[filename] = tuple(d.code for d in result.remaining if needs_unsafe(d, self.unsafe))
        return result.source


@dataclass
class SingleFixTransform:
    """Apply the fix of one finding only: the one of ``code`` starting at ``line`` of ``filename``.

    Reconciliation runs an arm per fix with it, to see which breaks each fix
    removes on its own (a fix at one line can remove breaks at others).
    Other files pass through unchanged.
    """

    settings: Settings
    unsafe: bool
    filename: str
    code: str
    line: int
    seeds: Mapping[str, tuple[Seed, ...]] = field(default_factory=dict)
    applied: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __call__(self, source: str, filename: str) -> str:
        from graphmend_lint.verify.static import apply_one_fix

        if os.path.realpath(filename) != os.path.realpath(self.filename):
            return source
        fixed = apply_one_fix(source, filename, self.settings, self.unsafe, self.seeds.get(filename, ()),
                              self.code, self.line)
        self.applied[filename] = (self.code,) if fixed != source else ()
        return fixed


@dataclass(frozen=True)
class ReplaceTransform:
    """Compile given texts instead of the files' contents (keys: real paths).

    Rollback uses it to run "the file before the fix" and "the file after the
    fix" without writing either to disk.
    """

    texts: Mapping[str, str]

    def __call__(self, source: str, filename: str) -> str:
        return self.texts.get(os.path.realpath(filename), source)


@dataclass
class ReferencedTransform:
    """A transform named by ``file.py::name`` or ``package.module:name``, imported where it runs.

    ``--transform`` uses it: the parent only passes the reference, so the
    function needs no pickling and is imported inside the arm.
    """

    reference: str
    base: str | None = None

    def __call__(self, source: str, filename: str) -> str:
        from pathlib import Path

        from graphmend_lint.verify.targets import resolve_reference

        function = resolve_reference(self.reference, Path(self.base) if self.base else None)
        return str(function(source, filename))


def in_scope(module: str, scope: Iterable[str]) -> bool:
    """A module is in scope when it, or a package containing it, is listed."""
    return any(module == name or module.startswith(name + ".") for name in scope)


@dataclass(frozen=True)
class LoadedModule:
    """A scope module the hook compiled."""

    name: str
    filename: str
    changed: bool
    text: str = field(default="", repr=False)  # what was compiled


class _TransformingLoader(importlib.machinery.SourceFileLoader):
    """A source loader whose code comes from the transform, never from a .pyc."""

    def __init__(self, fullname: str, path: str, finder: FixingFinder) -> None:
        super().__init__(fullname, path)
        self._finder = finder
        self._text: str | None = None

    def get_source(self, fullname: str) -> str:
        if self._text is None:
            original = importlib.util.decode_source(self.get_data(self.path))
            self._text = self._finder.transform(original, self.path)
            self._finder.record(LoadedModule(fullname, self.path, self._text != original, self._text))
            lines = self._text.splitlines(keepends=True)
            # mtime None: linecache.checkcache keeps the entry instead of re-reading the disk.
            linecache.cache[self.path] = (len(self._text), None, lines, self.path)
        return self._text

    def get_code(self, fullname: str) -> CodeType:
        return compile(self.get_source(fullname), self.path, "exec", dont_inherit=True)


class FixingFinder(importlib.abc.MetaPathFinder):
    """Route scope modules through :class:`_TransformingLoader`."""

    def __init__(self, scope: Sequence[str], transform: Transform) -> None:
        self.scope = tuple(scope)
        self.transform = transform
        self.loaded: list[LoadedModule] = []
        self.filenames: set[str] = set()

    def record(self, module: LoadedModule) -> None:
        self.loaded.append(module)
        self.filenames.add(module.filename)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not in_scope(fullname, self.scope):
            return None
        spec = self._spec_from_other_finders(fullname, path, target)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader) or not spec.origin:
            return spec  # extension modules, namespace packages: nothing to fix
        return importlib.util.spec_from_file_location(
            fullname,
            spec.origin,
            loader=_TransformingLoader(fullname, spec.origin, self),
            submodule_search_locations=spec.submodule_search_locations,
        )

    def _spec_from_other_finders(
        self, fullname: str, path: Sequence[str] | None, target: Any
    ) -> importlib.machinery.ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None


@contextlib.contextmanager
def installed(scope: Sequence[str], transform: Transform) -> Iterator[FixingFinder]:
    """Put a :class:`FixingFinder` first on ``sys.meta_path`` for the duration.

    A scope module imported *before* this point would silently keep its
    original code, so that is an error rather than a surprise.
    """
    early = sorted(name for name in sys.modules if in_scope(name, scope))
    if early:
        raise RuntimeError(f"scope modules already imported before the fixing hook: {', '.join(early)}")
    finder = FixingFinder(scope, transform)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
