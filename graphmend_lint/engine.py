"""Lint and fix files on disk: discovery, cross-file scope, parallelism, cache, writes.

This is the only module of the linter that touches the disk. The flow is one
way: discover paths, read and decode, run the pure pipeline
(:mod:`graphmend_lint.pipeline`) in worker processes, route cross-file scope
seeds and re-run the files they reach, then (when fixing) write atomically.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import gc
import hashlib
import json
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from graphmend_lint import __version__
from graphmend_lint.analysis.imports import module_name_for
from graphmend_lint.analysis.scope import Seed
from graphmend_lint.config import Settings
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.disk import ReadFailure, WriteRefused, read_source, write_fix
from graphmend_lint.notebook import NOTEBOOK_SUFFIX, Notebook, NotebookError
from graphmend_lint.pipeline import FileOutcome, analyze, fix
from graphmend_lint.source import SourceFile

#: Below this many files a process pool costs more than it saves.
MIN_FILES_FOR_POOL = 16
MAX_SEED_ROUNDS = 6
#: Generation-0 threshold while linting. astroid and libcst allocate millions
#: of small objects per big file; at CPython's default (700) the cyclic
#: collector re-scanned them so often that it cost about a fifth of the CPU time.
GC_THRESHOLD = 50_000
CACHE_DIR = ".graphmend_cache"
#: What a directory walk lints: Python sources and, as in ruff, Jupyter notebooks.
LINTED_SUFFIXES = (".py", ".pyi", NOTEBOOK_SUFFIX)


@dataclass
class FileReport:
    """Everything the CLI needs to know about one file after a run.

    ``errors`` say why the file could not be checked (read, decode);
    ``fix_errors`` why its fixes were not written; ``notes`` why it was
    skipped on purpose (size, binary). For a notebook, ``source`` and
    ``fixed_source`` are its JSON text and ``cell_sources`` its code cells by
    number, which the findings' lines are relative to.
    """

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    applied: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    fix_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    internal_errors: list[str] = field(default_factory=list)
    source: str | None = None
    fixed_source: str | None = None
    cell_sources: dict[int, str] = field(default_factory=dict)


@dataclass
class RunReport:
    """The outcome of linting (and maybe fixing) a set of paths."""

    files: list[FileReport] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = [d for f in self.files for d in f.diagnostics]
        return sorted(found, key=lambda d: d.sort_key)

    @property
    def applied(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.applied]

    @property
    def all_errors(self) -> list[str]:
        """Paths not found, files not read or decoded, and fixes not written."""
        return [*self.unchecked, *self.unfixed]

    @property
    def unchecked(self) -> list[str]:
        """Why paths could not be checked at all (missing, unreadable, undecodable)."""
        return [*self.errors, *(e for f in self.files for e in f.errors)]

    @property
    def unfixed(self) -> list[str]:
        """Why fixes were not written (read-only file, changed on disk, a fix that does not parse)."""
        return [e for f in self.files for e in f.fix_errors]

    @property
    def skipped(self) -> list[str]:
        """Files skipped on purpose (over ``max-file-size``, binary), one note each."""
        return [n for f in self.files for n in f.notes]

    @property
    def internal_errors(self) -> list[str]:
        return [e for f in self.files for e in f.internal_errors]


# -- discovery ----------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _exclude_matcher(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """All exclude globs as one compiled regex (fnmatch semantics)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or r"(?!)")


def _is_excluded(path: Path, settings: Settings, walk_root: Path | None = None, check_parents: bool = True) -> bool:
    """Whether an exclude glob matches the path's name, its path below the project, or a parent folder.

    Paths outside the project root are matched relative to the directory being
    walked, so linting ``.../site-packages/transformers`` is not excluded by the
    default ``site-packages`` pattern. While walking, parents were already
    checked on the way down, so only the name and relative path are matched.
    """
    matcher = _exclude_matcher((*settings.exclude, *settings.extend_exclude))
    absolute = os.path.abspath(path)
    relative = path.as_posix()
    for base in (settings.root, walk_root):
        if base is not None:
            inside = os.path.relpath(absolute, os.path.abspath(base))
            if not inside.startswith(".."):
                relative = inside.replace(os.sep, "/")
                break
    if matcher.match(path.name) or matcher.match(relative):
        return True
    return check_parents and any(matcher.match(part) for part in relative.split("/")[:-1])


def discover(paths: Sequence[str], settings: Settings) -> tuple[list[Path], list[str]]:
    """Python files and notebooks under *paths*, honouring excludes; plus messages for missing paths.

    Files named explicitly are linted even when excluded, unless
    ``force-exclude`` is set (pre-commit names files explicitly).
    """
    files: list[Path] = []
    errors: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            errors.append(f"{raw}: No such file or directory")
        elif path.is_dir():
            files.extend(_walk(path, settings))
        elif settings.force_exclude and _is_excluded(path, settings):
            continue
        else:
            files.append(path)
    unique = sorted(dict.fromkeys(files), key=lambda p: p.as_posix())
    return unique, errors


def _walk(directory: Path, settings: Settings) -> Iterator[Path]:
    for current, dirnames, filenames in os.walk(directory):
        base = Path(current)
        dirnames[:] = sorted(d for d in dirnames if not _is_excluded(base / d, settings, directory, False))
        for name in sorted(filenames):
            candidate = base / name
            if name.endswith(LINTED_SUFFIXES) and not _is_excluded(candidate, settings, directory, False):
                yield candidate


# -- cache --------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """Sizes and mtimes of the linter's own modules and the loaded rules.

    The version alone does not change while a checkout is edited or a rule
    plugin is upgraded, and a stale cache would silently replay old findings.
    """
    from graphmend_lint.rules import all_rules

    package = Path(__file__).parent
    stamps = sorted((str(p.relative_to(package)), p.stat().st_size, p.stat().st_mtime_ns) for p in package.rglob("*.py"))
    digest = hashlib.sha256(repr(stamps).encode())
    digest.update(repr([(r.code, r.__module__) for r in all_rules()]).encode())
    return digest.hexdigest()[:16]


class ResultCache:
    """Per-file results keyed by tool version and code, settings, cross-file seeds and file bytes."""

    def __init__(self, root: Path, settings: Settings, enabled: bool) -> None:
        self.directory = root / CACHE_DIR / __version__.replace("+", "_")
        self.fingerprint = settings.fingerprint + _code_fingerprint()
        self.enabled = enabled

    def key(self, data: bytes, path: str, seeds: Sequence[Seed]) -> str:
        digest = hashlib.sha256(data)
        digest.update(self.fingerprint.encode())
        digest.update(path.encode())
        digest.update(json.dumps(sorted((s.qualname, s.via_decorator, s.chain) for s in seeds)).encode())
        return digest.hexdigest()

    def get(self, key: str) -> FileOutcome | None:
        if not self.enabled:
            return None
        try:
            with (self.directory / key[:2] / key).open("rb") as stream:
                outcome = pickle.load(stream)
        except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError):
            return None
        return outcome if isinstance(outcome, FileOutcome) else None

    def put(self, key: str, outcome: FileOutcome) -> None:
        if not self.enabled or outcome.internal_errors:
            return
        target = self.directory / key[:2] / key
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._ensure_gitignore()
            handle, temporary = tempfile.mkstemp(dir=target.parent)
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(outcome, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, target)
        except OSError:
            pass  # a read-only tree still lints, just without a cache

    def _ensure_gitignore(self) -> None:
        ignore = self.directory.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by graphmend-lint\n*\n")


# -- the run ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    path: str
    seeds: tuple[Seed, ...]
    settings: Settings
    use_cache: bool
    fix: bool
    unsafe: bool
    cache_root: str


JobResult = tuple[FileReport, FileOutcome | None]


@dataclass(frozen=True)
class _Read:
    """A file as read: its bytes, the module text the pipeline lints, and the notebook it came from (if any)."""

    data: bytes
    source: SourceFile
    notebook: Notebook | None = None

    @property
    def text(self) -> str:
        """The file's own text: the notebook's JSON, or the module itself."""
        return self.notebook.text if self.notebook is not None else self.source.text


def _read_for(job: _Job) -> _Read | FileReport:
    try:
        data, source = read_source(Path(job.path), job.settings.max_file_size)
        if not job.path.endswith(NOTEBOOK_SUFFIX):
            return _Read(data, source)
        notebook = Notebook.parse(job.path, source.text)
        return _Read(data, SourceFile(notebook.module, source.encoding), notebook)
    except (ReadFailure, NotebookError) as failure:
        report = FileReport(path=job.path)
        skip = isinstance(failure, ReadFailure) and failure.skip
        (report.notes if skip else report.errors).append(str(failure))
        return report


def _in_file(read: _Read, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Findings with positions in the file's own terms: (cell, line) for a notebook."""
    return read.notebook.to_cells(diagnostics) if read.notebook is not None else list(diagnostics)


def _report(job: _Job, read: _Read, outcome: FileOutcome, report: FileReport | None = None) -> JobResult:
    report = report or FileReport(path=job.path)
    report.diagnostics = _in_file(read, outcome.diagnostics)
    report.internal_errors = list(outcome.internal_errors)
    if outcome.diagnostics or report.fixed_source is not None:
        report.source = read.text
        report.cell_sources = read.notebook.cell_sources() if read.notebook is not None else {}
    return report, outcome


def _cached(job: _Job) -> JobResult | None:
    """The cached result of a lint job, looked up without a worker process."""
    if job.fix or not job.use_cache:
        return None
    read = _read_for(job)
    if isinstance(read, FileReport):
        return read, None
    cache = ResultCache(Path(job.cache_root), job.settings, True)
    outcome = cache.get(cache.key(read.data, job.path, job.seeds))
    return _report(job, read, outcome) if outcome is not None else None


def _run_job(job: _Job) -> JobResult:
    """Worker entry point: read, lint or fix, one file."""
    read = _read_for(job)
    if isinstance(read, FileReport):
        return read, None
    report = FileReport(path=job.path)
    if job.fix:
        return _fix_job(job, read, report)
    outcome = analyze(read.source, job.path, job.settings, job.seeds)
    cache = ResultCache(Path(job.cache_root), job.settings, job.use_cache)
    cache.put(cache.key(read.data, job.path, job.seeds), outcome)
    return _report(job, read, outcome, report)


def _fix_job(job: _Job, read: _Read, report: FileReport) -> JobResult:
    """Fix one file; a notebook gets its fixed module spliced back into its cells, or nothing at all."""
    fixed = fix(read.source, job.path, job.settings, job.unsafe, job.seeds)
    if fixed.error:
        report.fix_errors.append(fixed.error)
    if fixed.result.source == read.source.text:
        return _report(job, read, fixed.outcome, report)
    if read.notebook is None:
        report.fixed_source = fixed.result.source
        report.applied = list(fixed.result.applied)
        return _report(job, read, fixed.outcome, report)
    try:
        fixed_notebook = _fixed_notebook(read.notebook, fixed.result.source)
    except NotebookError as error:
        report.fix_errors.append(str(error))
        return _report(job, read, analyze(read.source, job.path, job.settings, job.seeds), report)
    report.fixed_source = fixed_notebook.text
    report.applied = read.notebook.to_cells(fixed.result.applied)
    result = _report(job, read, fixed.outcome, report)
    report.diagnostics = fixed_notebook.to_cells(fixed.outcome.diagnostics)  # lines of the fixed cells
    report.cell_sources = fixed_notebook.cell_sources()
    return result


def _fixed_notebook(notebook: Notebook, module: str) -> Notebook:
    """The notebook holding the fixed *module*, read back to prove it is the module that was linted."""
    fixed = Notebook.parse(notebook.path, notebook.with_module(module))
    if fixed.module != module:
        raise NotebookError(f"{notebook.path}: the fixed cells do not read back as the fixed code; fix not written")
    return fixed


def _set_gc_threshold() -> None:
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Raise the collector's threshold for a run, and put the caller's back afterwards."""
    previous = gc.get_threshold()
    _set_gc_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _map(jobs: list[_Job], workers: int) -> list[JobResult]:
    """Run *jobs*: cache hits here, the rest in a process pool when there are enough of them."""
    results: list[JobResult | None] = [_cached(job) for job in jobs]
    missing = [index for index, result in enumerate(results) if result is None]
    todo = [jobs[index] for index in missing]
    if workers <= 1 or len(todo) < MIN_FILES_FOR_POOL:
        computed = [_run_job(job) for job in todo]
    else:
        with ProcessPoolExecutor(max_workers=workers, initializer=_set_gc_threshold) as pool:
            # Small chunks: big modeling files cluster by name, and large chunks left one worker idle.
            computed = list(pool.map(_run_job, todo, chunksize=max(1, min(8, len(todo) // (workers * 32)))))
    for index, result in zip(missing, computed):
        results[index] = result
    return [result for result in results if result is not None]


def _route_seeds(
    sources: Iterable[FileOutcome],
    outcomes: dict[str, FileOutcome],
    modules: dict[str, str],
    known: dict[str, set[Seed]],
) -> dict[str, set[Seed]]:
    """New seeds per target file: calls from the files just linted (*sources*) into other linted files.

    Only the files of the last round are looked at: seeds of the others were
    routed already, and a target's traced set only grows.
    """
    module_of = {path: module for module, path in modules.items()}
    fresh: dict[str, set[Seed]] = {}
    for outcome in sources:
        for seed in outcome.seeds:
            target = _module_file(seed.qualname, modules)
            if target is None:
                continue
            local = seed.qualname.removeprefix(module_of[target] + ".")
            target_outcome = outcomes.get(target)
            if target_outcome is not None and not target_outcome.seed_sinks.takes(local, seed.via_decorator):
                continue
            if seed not in known.get(target, set()):
                fresh.setdefault(target, set()).add(seed)
    return fresh


def _module_file(qualname: str, modules: dict[str, str]) -> str | None:
    """The linted file defining *qualname*: its longest module prefix."""
    parts = qualname.split(".")
    for end in range(len(parts) - 1, 0, -1):
        found = modules.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def settle_seeds(
    outcomes: dict[str, FileOutcome],
    modules: dict[str, str],
    seeds: dict[str, set[Seed]],
    relint: Callable[[list[str]], dict[str, FileOutcome]],
) -> None:
    """Route calls between files until no file gains a seed (or MAX_SEED_ROUNDS).

    ``outcomes`` holds the first round (path -> outcome), ``modules`` maps
    module names to the linted paths, and ``relint`` re-analyses paths with the
    updated ``seeds`` and returns their new outcomes. Both ``outcomes`` and
    ``seeds`` are updated in place. Shared by the engine and by verify, which
    lints module texts in memory.
    """
    last_round = list(outcomes)
    for _ in range(MAX_SEED_ROUNDS):
        sources = [outcomes[path] for path in last_round if path in outcomes]
        fresh = _route_seeds(sources, outcomes, modules, seeds)
        if not fresh:
            return
        for path, new in fresh.items():
            seeds.setdefault(path, set()).update(new)
        last_round = sorted(fresh)
        outcomes.update(relint(last_round))


def run(
    paths: Sequence[str],
    settings: Settings,
    *,
    fix: bool = False,
    unsafe: bool = False,
    write: bool = True,
    jobs: int | None = None,
    use_cache: bool = True,
) -> RunReport:
    """Lint (and with *fix*, fix) every Python file and notebook under *paths*."""
    with _fewer_collections():
        return _run(paths, settings, fix, unsafe, write, jobs, use_cache)


def _run(
    paths: Sequence[str], settings: Settings, fix: bool, unsafe: bool, write: bool, jobs: int | None, use_cache: bool
) -> RunReport:
    files, errors = discover(paths, settings)
    report = RunReport(errors=errors)
    workers = jobs or os.cpu_count() or 1
    cache_root = settings.root
    # A notebook cannot be imported, so no other file's call can reach into it.
    modules = {module_name_for(str(p))[0]: str(p) for p in files if p.suffix != NOTEBOOK_SUFFIX}
    seeds: dict[str, set[Seed]] = {}

    def make_job(path: str, with_fix: bool) -> _Job:
        return _Job(path, tuple(sorted(seeds.get(path, ()), key=repr)), settings, use_cache, with_fix, unsafe, cache_root)

    results = dict(zip(map(str, files), _map([make_job(str(p), False) for p in files], workers)))

    def relint(paths: list[str]) -> dict[str, FileOutcome]:
        fresh = dict(zip(paths, _map([make_job(path, False) for path in paths], workers)))
        results.update(fresh)
        return {path: outcome for path, (_, outcome) in fresh.items() if outcome is not None}

    outcomes = {path: outcome for path, (_, outcome) in results.items() if outcome is not None}
    settle_seeds(outcomes, modules, seeds, relint)
    if fix:
        to_fix = [p for p, (r, _) in results.items() if any(d.fix is not None for d in r.diagnostics)]
        linted = {path: results[path][0] for path in to_fix}
        results.update(zip(to_fix, _map([make_job(path, True) for path in to_fix], workers)))
        if write:
            _write_fixes([(results[path][0], linted[path]) for path in to_fix], settings)
    report.files = [results[str(path)][0] for path in files]
    return report


def _write_fixes(pairs: Iterable[tuple[FileReport, FileReport]], settings: Settings) -> None:
    """Write each fixed file; one that cannot be written gets its findings back, unfixed.

    *pairs* hold the fixing report and the plain lint report of one file.
    Two paths to one file (a symlink and its target) are written once.
    """
    written: set[str] = set()
    for fixed, linted in pairs:
        if fixed.fixed_source is None:
            continue
        path = Path(fixed.path)
        real = os.path.realpath(path)
        if real in written:
            continue
        try:
            write_back(path, fixed.source or "", fixed.fixed_source, settings)
            written.add(real)
        except (OSError, ReadFailure, WriteRefused) as error:
            message = str(error) if not isinstance(error, OSError) else f"{path}: cannot write fix: {error}"
            fixed.fix_errors.append(message)
            fixed.diagnostics, fixed.applied, fixed.fixed_source = linted.diagnostics, [], None
            fixed.cell_sources = linted.cell_sources


def write_back(path: Path, expected: str, text: str, settings: Settings, what: str = "fix") -> None:
    """Replace *path*'s text with *text*, provided it still reads as *expected* (what was linted).

    The one way the linter rewrites a user's file (``--fix`` and
    ``--add-noqa``): re-read so an edit made meanwhile is never overwritten,
    encode back with the file's encoding and byte-order mark, and leave the
    rest to :func:`graphmend_lint.disk.write_fix` (permissions, symlinks, hard
    links, atomic rename). *what* names the change in the refusal messages.
    Raises :class:`WriteRefused`, :class:`ReadFailure` or ``OSError``.
    """
    _, source = read_source(path, settings.max_file_size)
    if source.text != expected:
        raise WriteRefused(f"{path}: changed on disk since it was linted; {what} not written")
    write_fix(path, source.to_bytes(text), what)
