"""Measure the real graph breaks of a callable with torch Dynamo.

``torch._dynamo.explain`` alone under-reports: a break inside a loop makes
Dynamo skip the whole frame (explain then shows no graphs and no reasons), and a
break that happens before any tensor op of the current graph leaves no reason
at all. So three sources are combined:

* the ``graph_breaks`` logging artifact is the source of truth for break sites:
  Dynamo logs every break it meets, with the user stack and the GB id link;
* ``explain`` gives the graph count, and its break reasons back the log up;
* Dynamo's compilation metrics name the frames it gave up on entirely.

Not every logged break splits a graph. A ``print`` placed after the last
tensor op still makes Dynamo log a break, but its resume function compiles no
graph, so no second graph forms (explain counts 0 breaks). A logged site is
*splitting* when, in the order Dynamo compiled frames during the call, a graph
with at least one op was compiled at or before the frame that logged the break
and another one after it, or when the break made Dynamo skip its frame
entirely. ``BreakReport.splitting_sites`` holds those; see ``docs/verify.md``.

Run ``python -m graphmend_lint.verify.breaks file.py::factory`` to print the
report for a factory returning ``(callable, [args tuples])``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import logging
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch._dynamo
from torch._dynamo import bytecode_transformation
from torch._dynamo import utils as dynamo_utils
from torch._logging._internal import log_registry

InputSet = tuple[tuple[Any, ...], dict[str, Any]]
Location = tuple[str, int]

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_THIS_FILE = os.path.abspath(__file__)
# The standard library, but not the site-packages that may sit below it. A break Dynamo logs inside
# stdlib code (module-level ``logging.debug`` logs GB4841 in ``logging/__init__.py``) is the user's
# call into it: that call is the line a user can change.
_STDLIB_DIRS = tuple(
    {os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")}
)
_PACKAGE_DIRS = tuple(
    {os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("purelib", "platlib")}
)
# torch registers one logger per emitting module, named "<module>.__graph_breaks"
# (torch 2.13: symbolic_convert, convert_frame and exc).
_ARTIFACT_LOGGER_SUFFIX = ".__graph_breaks"
# convert_frame lets a frame fall back to eager only for these soft failures;
# any other exception is re-raised, so these names mean "frame skipped".
_FRAME_SKIPPING_FAILURES = frozenset({"Unsupported", "UserError"})
# Dynamo keeps only the last 64 frame compilations by default; a model with a
# break per layer compiles more frames than that (every resume is a frame).
_METRICS_LIMIT = 100_000

_HEADER_RE = re.compile(r"in user code at (?P<file>.+):(?P<line>\d+)$", re.MULTILINE)
_FRAME_RE = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in ', re.MULTILINE)
_GB_ID_RE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)
_REASON_RE = re.compile(r"Graph Break Reason: (.*)")
_TRACEBACK_MARKERS = (
    "User code traceback:",
    "The graph break occurred in the following user code:",
)


@dataclass(frozen=True)
class BreakSite:
    """One place in user code where Dynamo broke the graph."""

    filename: str  # absolute path of the user frame Dynamo blamed
    line: int
    reason: str  # Dynamo's gb_type, e.g. "Data-dependent branching"
    gb_id: str | None  # e.g. "GB0170", from the documentation link


@dataclass(frozen=True)
class BreakReport:
    """What Dynamo really did with a callable."""

    graph_count: int
    explain_break_count: int  # explain()'s graph_count - 1 (-1 when every frame was skipped)
    sites: tuple[BreakSite, ...]  # distinct (filename, line, gb_id), sorted
    skipped_frames: tuple[str, ...]  # "file:firstline func" of frames run fully eager
    # The subset of ``sites`` that really split a graph or skipped a frame (module docstring).
    splitting_sites: tuple[BreakSite, ...] = ()

    @property
    def break_count(self) -> int:
        """Distinct break sites: explain's count is only graph_count - 1."""
        return len(self.sites)

    @property
    def splitting_count(self) -> int:
        """Distinct sites that split a graph; the number a fix should bring down."""
        return len(self.splitting_sites)

    def lines_in(self, filename: str) -> set[int]:
        """Break lines in one file, comparing real paths so symlinked tmp dirs match."""
        target = os.path.realpath(filename)
        return {s.line for s in self.sites if os.path.realpath(s.filename) == target}


@dataclass(frozen=True)
class _LogRecord:
    """The parts of one graph_breaks log message that locate and name a break."""

    header: Location | None  # where Dynamo says it broke (may be a torch frame)
    user_frame: Location | None  # innermost user frame of the logged stack
    reason: str
    gb_id: str | None


def capture_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> BreakReport:
    """Run ``fn(*args, **kwargs)`` under Dynamo and report every real graph break.

    ``fn`` may be a function or an ``nn.Module`` (its forward frames are traced
    through the module call). Exceptions raised by ``fn`` propagate once the
    logging and metrics settings are restored.
    """
    # explain() resets too, but that is its private detail; results must not
    # depend on earlier compilations (caches, the duplicate-break log filter).
    torch._dynamo.reset()
    with _captured_graph_break_log() as collector, _fresh_compilation_metrics():
        explained = torch._dynamo.explain(fn)(*args, **kwargs)
        metrics = dynamo_utils.get_compilation_metrics()
    occurrences = _occurrences_from_log(collector.messages, collector.positions)
    log_sites = [site for site, _ in occurrences]
    explain_sites = _explain_only_sites(explained.break_reasons, log_sites)
    splitting = [site for site, position in occurrences if _splits(position, metrics)]
    return BreakReport(
        graph_count=explained.graph_count,
        explain_break_count=explained.graph_break_count,
        sites=_distinct_sites([*log_sites, *explain_sites]),
        skipped_frames=_skipped_frames(metrics),
        # explain only words a reason when a graph really ended there, and such
        # a site has no place in the frame order: count it as splitting.
        splitting_sites=_distinct_sites([*splitting, *explain_sites]),
    )


def capture_breaks_over(
    fn: Callable[..., Any],
    input_sets: Sequence[InputSet],
    before_each: Callable[[], object] | None = None,
) -> BreakReport:
    """Measure ``fn`` on every ``(args, kwargs)`` set so that every branch runs.

    Dynamo only traces the branch an input takes, so one input can hide the
    breaks of the other branch. Each set is measured from a fresh Dynamo state;
    sites and skipped frames are merged, counts are the worst single run.
    ``before_each`` runs before each measurement (e.g. to re-seed the RNG, so
    that two programs compared with each other see the same random numbers).
    """
    if not input_sets:
        raise ValueError("capture_breaks_over needs at least one input set")
    reports = []
    for args, kwargs in input_sets:
        if before_each is not None:
            before_each()
        reports.append(capture_breaks(fn, *args, **kwargs))
    return BreakReport(
        graph_count=max(r.graph_count for r in reports),
        explain_break_count=max(r.explain_break_count for r in reports),
        sites=_distinct_sites(site for r in reports for site in r.sites),
        skipped_frames=tuple(sorted({f for r in reports for f in r.skipped_frames})),
        splitting_sites=_distinct_sites(site for r in reports for site in r.splitting_sites),
    )


def _graph_break_loggers() -> list[logging.Logger]:
    """Every logger emitting the graph_breaks artifact, read from torch's registry.

    Reading the registry instead of hard-coding module names keeps a logger
    added by a later torch from being silently missed.
    """
    return artifact_loggers(_ARTIFACT_LOGGER_SUFFIX)


def artifact_loggers(suffix: str) -> list[logging.Logger]:
    """The loggers of one ``torch._logging`` artifact (qualified names ending in *suffix*), from torch's registry."""
    names = sorted(q for q in log_registry.get_artifact_log_qnames() if q.endswith(suffix))
    if not names:
        raise RuntimeError(f"torch registers no loggers ending in {suffix!r}; cannot measure")
    return [logging.getLogger(name) for name in names]


@contextlib.contextmanager
def artifact_log_to(handler: logging.Handler, loggers: list[logging.Logger]) -> Iterator[None]:
    """Send *loggers* (artifact loggers, off by default) to *handler* only, then put them back as they were.

    The artifact loggers are switched on directly rather than through
    ``torch._logging.set_logs``: set_logs replaces *all* of the user's logging
    settings and torch has no getter to restore them, and it would also echo
    every record to stderr. Propagation is off while measuring for that reason.
    """
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
        lg.addHandler(handler)
    try:
        yield
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate


class _MessageCollector(logging.Handler):
    """Keeps the formatted message of every record it receives, and when it came.

    ``positions[i]`` is how many compilation-metrics records existed when
    message ``i`` was logged. Dynamo appends one record per frame at the *end*
    of compiling it, so a message logged while compiling frame ``k`` (0-based,
    in compile order) gets position ``k``: that is how a break is placed among
    the graphs of the call without relying on clocks.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.positions: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.positions.append(len(dynamo_utils.get_compilation_metrics()))


@contextlib.contextmanager
def _captured_graph_break_log() -> Iterator[_MessageCollector]:
    """Collect graph_breaks messages, each with its user stack, then put the loggers back as they were."""
    collector = _MessageCollector()
    with artifact_log_to(collector, _graph_break_loggers()), _every_user_stack_logged(), _resume_lines_repaired():
        yield collector


@contextlib.contextmanager
def _resume_lines_repaired() -> Iterator[None]:
    """Make the line tables of the resume functions Dynamo builds say the lines the instructions came from.

    Dynamo's 3.11+ line-table writer splits an instruction longer than 8 code units (``LOAD_METHOD``
    with its caches) into several entries and gives each the instruction's line delta, where CPython
    gives it to the first only. Every instruction after such a ``LOAD_METHOD`` that starts a new line
    then decodes one or more lines too far, and Dynamo logs the breaks of a resumed frame there:
    nanodet's ``valid_mask.nonzero()`` on line 56 of a program is logged at the blank line 57
    (torch 2.13, measured). The writer here gives the delta to the first entry only. Lines are
    metadata: which breaks happen, and where the graphs split, do not change.
    """
    write = bytecode_transformation.linetable_311_writer

    def repaired_writer(first_lineno: int) -> tuple[list[int], Callable[[Any, int], None]]:
        linetable, update = write(first_lineno)

        def update_once(positions: Any, inst_size: int) -> None:
            update(positions, min(inst_size, 8))
            if inst_size > 8:
                update(positions, inst_size - 8)  # the same line again: a delta of 0

        return linetable, update_once

    bytecode_transformation.linetable_311_writer = repaired_writer
    try:
        yield
    finally:
        bytecode_transformation.linetable_311_writer = write


@contextlib.contextmanager
def _every_user_stack_logged() -> Iterator[None]:
    """Make Dynamo log the user stack of a break it has logged before.

    Dynamo logs a repeated break (same GB type, same chain of frame locations) as "user stack
    suppressed" with only its own location. When that location is library code, two user lines
    calling into it cannot be told apart: module-level ``logging.debug`` at two lines of a model both
    break at one line of ``logging/__init__.py`` (measured, torch 2.13). ``config.verbose`` would log
    them but also changes the messages, so only the duplicate check is bypassed.
    """
    checker = dynamo_utils.graph_break_dup_warning_checker
    checker.add = lambda key: True  # type: ignore[method-assign]
    try:
        yield
    finally:
        del checker.add


@contextlib.contextmanager
def _fresh_compilation_metrics() -> Iterator[None]:
    """Start the frame-compilation metrics empty and large enough for one measurement."""
    old_limit = dynamo_utils._compilation_metrics.maxlen
    dynamo_utils.clear_compilation_metrics()
    dynamo_utils.set_compilation_metrics_limit(_METRICS_LIMIT)
    try:
        yield
    finally:
        dynamo_utils.set_compilation_metrics_limit(old_limit)


def _skipped_frames(metrics: Iterable[Any]) -> tuple[str, ...]:
    """Frames whose compilation failed softly, i.e. that Dynamo ran fully eager."""
    return tuple(
        sorted(
            {
                f"{m.co_filename}:{m.co_firstlineno} {m.co_name}"
                for m in metrics
                if m.fail_type in _FRAME_SKIPPING_FAILURES
            }
        )
    )


def _is_user_file(filename: str) -> bool:
    """User code is anything that is neither torch itself, the standard library, nor generated (``<...>``)."""
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    in_stdlib = path.startswith(_STDLIB_DIRS) and not path.startswith(_PACKAGE_DIRS)
    return not in_stdlib and not path.startswith(_TORCH_DIR)


def _innermost_user_frame(frames: Iterable[Location]) -> Location | None:
    """The deepest user frame, ignoring frames above this module's own call.

    The logged stack also holds the frames that called Dynamo (this module,
    the test runner); a break inside torch itself has no user frame below them.
    """
    for filename, line in reversed(list(frames)):
        path = os.path.abspath(filename)
        if path == _THIS_FILE:
            return None
        if _is_user_file(path):
            return path, line
    return None


def _parse_log_message(message: str) -> _LogRecord:
    """Pull location, gb_type and GB id out of one graph_breaks message.

    The first GB link is the original break; later ones (e.g. GB7000 "graph
    break in loop") describe Dynamo's reaction to it.
    """
    header = _HEADER_RE.search(message)
    stack_start = max(message.rfind(marker) for marker in _TRACEBACK_MARKERS)
    frames = (
        [(m["file"], int(m["line"])) for m in _FRAME_RE.finditer(message, stack_start)]
        if stack_start >= 0
        else []
    )
    return _LogRecord(
        header=(header["file"], int(header["line"])) if header else None,
        user_frame=_innermost_user_frame(frames),
        reason=_gb_type(message),
        gb_id=_gb_id(message),
    )


def _gb_id(text: str) -> str | None:
    """The first GB id linked in ``text``, upper-cased like the registry keys."""
    match = _GB_ID_RE.search(text)
    return match.group(1).upper() if match else None


def _gb_type(message: str) -> str:
    """Dynamo prints the gb_type on the line right above the first ``Explanation:``."""
    lines = message.splitlines()
    for previous, line in itertools.pairwise(lines):
        if line.startswith("  Explanation:"):
            return previous.removeprefix("Graph Break Reason: ").strip()
    reason = _REASON_RE.search(message)
    return reason.group(1).strip() if reason else lines[0].strip()


def _sites_from_log(messages: Iterable[str]) -> list[BreakSite]:
    """Turn graph_breaks messages into user-code sites."""
    messages = list(messages)
    return [site for site, _ in _occurrences_from_log(messages, [0] * len(messages))]


def _occurrences_from_log(
    messages: Sequence[str], positions: Sequence[int]
) -> list[tuple[BreakSite, int]]:
    """Each user-code site a message names, with the message's position.

    A repeated break is logged as "user stack suppressed" with only Dynamo's
    location, which can be a torch frame; it is mapped to the user frame an
    earlier full message gave for the same location. (Breaks measured here log
    every stack, see ``_every_user_stack_logged``; logs read from elsewhere may not.)
    """
    user_frame_of: dict[Location, Location] = {}
    occurrences = []
    for message, position in zip(messages, positions, strict=True):
        record = _parse_log_message(message)
        if record.header and record.user_frame:
            user_frame_of[record.header] = record.user_frame
        location = record.user_frame or _user_location(record.header, user_frame_of)
        if location:
            site = BreakSite(location[0], location[1], record.reason, record.gb_id)
            occurrences.append((site, position))
    return occurrences


def _splits(position: int, metrics: Sequence[Any]) -> bool:
    """Whether a break logged at ``position`` separates two non-empty graphs.

    Frame compilations come in the order the call reached them. The frame
    being compiled when the break was logged is the first frame record at or
    after ``position``; its graph holds the ops *before* the break (a frame's
    compilation ends at its first break). The break splits when some graph up
    to that frame has ops and some later one too, or when the frame was
    skipped (it then runs fully eager, which is worse than a split). A break
    with no frame record after it (compilation aborted) counts as splitting.
    """
    frames = [(i, m) for i, m in enumerate(metrics) if m.co_name is not None]
    current = next((k for k, (i, _) in enumerate(frames) if i >= position), None)
    if current is None or frames[current][1].fail_type in _FRAME_SKIPPING_FAILURES:
        return True
    ops = [m.graph_op_count or 0 for _, m in frames]
    return any(ops[: current + 1]) and any(ops[current + 1 :])


def _user_location(
    header: Location | None, user_frame_of: dict[Location, Location]
) -> Location | None:
    """Where a stack-less message points in user code, if anywhere."""
    if header is None:
        return None
    if header in user_frame_of:
        return user_frame_of[header]
    return (os.path.abspath(header[0]), header[1]) if _is_user_file(header[0]) else None


def _explain_only_sites(
    break_reasons: Iterable[Any], log_sites: Iterable[BreakSite]
) -> list[BreakSite]:
    """Sites explain() reports at lines the log never mentioned.

    explain words reasons differently (e.g. "generic_jump TensorVariable()"
    without a GB link), so its reasons are matched to log sites by line only.
    """
    logged = {(s.filename, s.line) for s in log_sites}
    sites = []
    for reason in break_reasons:
        frames = [(f.filename, f.lineno) for f in reason.user_stack if f.lineno is not None]
        location = _innermost_user_frame(frames)
        if location and location not in logged:
            first_line = reason.reason.splitlines()[0].strip() if reason.reason else ""
            sites.append(BreakSite(*location, first_line, _gb_id(reason.reason)))
    return sites


def _distinct_sites(sites: Iterable[BreakSite]) -> tuple[BreakSite, ...]:
    """One site per (filename, line, gb_id), keeping the first reason seen, sorted."""
    by_key: dict[tuple[str, int, str], BreakSite] = {}
    for site in sites:
        by_key.setdefault((site.filename, site.line, site.gb_id or ""), site)
    return tuple(by_key[key] for key in sorted(by_key))


def format_report(report: BreakReport) -> str:
    """Human-readable report, one site per line; sites that split no graph are marked."""
    lines = [
        (
            f"graphs: {report.graph_count}  explain breaks: {report.explain_break_count}"
            f"  distinct break sites: {report.break_count}  splitting: {report.splitting_count}"
        )
    ]
    splitting = set(report.splitting_sites)
    lines += [
        f"  {s.filename}:{s.line}  {s.gb_id or '-'}  {s.reason}" + ("" if s in splitting else "  [no split]")
        for s in report.sites
    ]
    lines += [f"  skipped frame: {frame}" for frame in report.skipped_frames]
    return "\n".join(lines)


def _load_module(path: str) -> ModuleType:
    """Import a file by path, registered in sys.modules so dataclasses/pickle work."""
    name = f"_graphmend_breaks_target_{Path(path).stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: print the break report for ``file.py::factory``."""
    parser = argparse.ArgumentParser(prog="python -m graphmend_lint.verify.breaks")
    parser.add_argument("target", help="file.py::factory, factory() -> (callable, [args tuples])")
    target = parser.parse_args(argv).target
    path, sep, factory_name = target.rpartition("::")
    if not sep:
        parser.error("target must look like file.py::factory")
    fn, arg_tuples = getattr(_load_module(path), factory_name)()
    report = capture_breaks_over(fn, [(tuple(args), {}) for args in arg_tuples])
    print(format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
