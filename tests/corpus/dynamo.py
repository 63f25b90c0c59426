"""Run one program file under Dynamo: logged break sites, fullgraph success, eager and compiled behaviour.

This module runs inside a worker process (``worker.py``) and imports torch.
Break capture is graphmend_lint's own (``graphmend_lint.verify.breaks``): the
``graph_breaks`` logging artifact is collected and parsed by its helpers. The
call itself is made here rather than through ``capture_breaks`` because a
program may raise on purpose (a validation guard taking its raising side), and
``capture_breaks`` drops everything it logged when the call raises.

Every call imports the program afresh, builds its callable with ``make()`` and
seeds every RNG first, so module state (warn-once caches, running stats) cannot
leak from one call into the next, and the original and the fixed file see the
same numbers. Eager outcomes are taken first, then the logged compiled run,
then ``fullgraph=True``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch
import torch._dynamo
from graphmend_lint.verify import breaks

from tests.corpus.behaviour import Outcome, observe

#: The harness compiles with the eager backend: breaks and fullgraph failures
#: are Dynamo's decisions, made before any backend runs, and inductor would
#: cost seconds per graph on two CPU cores.
BACKEND = "eager"


@dataclass(frozen=True)
class Site:
    """A logged break in the program file itself."""

    line: int
    gb_id: str
    gb_type: str


@dataclass
class Measurement:
    """What Dynamo and eager execution did with one program file."""

    error: str | None = None  # the file does not import, make() fails, ...
    sites: set[Site] = field(default_factory=set)
    foreign_sites: int = 0  # logged breaks whose user frame is outside the program file
    traced_lines: set[int] = field(default_factory=set)  # lines of the program file Dynamo traced (any input set)
    fullgraph: list[str | None] = field(default_factory=list)  # per input set: None, or the failure
    eager: list[Outcome] = field(default_factory=list)
    compiled: list[Outcome] = field(default_factory=list)
    import_stdout: str = ""
    declared_raises: dict[int, str] = field(default_factory=dict)  # the program's RAISING_INPUTS


def seed_everything() -> None:
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)


def load_program(path: Path, module_name: str) -> tuple[ModuleType, str]:
    """Import a program file under ``module_name`` (the same name for the original and its fixed copy)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    _forget_warned_once()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        spec.loader.exec_module(module)
    return module, printed.getvalue()


def _forget_warned_once() -> None:
    """Clear the process-wide memo of transformers' ``warning_once``/``info_once``.

    It is an ``lru_cache`` keyed by the logger object, which outlives a fresh
    import of the program (loggers are process-wide), so without this an
    original's warning would silence its fixed copy's.
    """
    hf_logging = sys.modules.get("transformers.utils.logging")
    for name in ("warning_once", "info_once"):
        clear = getattr(getattr(hf_logging, name, None), "cache_clear", None)
        if clear is not None:
            clear()


def _per_input(path: Path, module_name: str, action: Callable[[Callable[..., Any], tuple[Any, ...]], Any]) -> tuple[list[Any], str]:
    """Run ``action(fn, args)`` once per input set, each time on a freshly imported program.

    A fresh import per call gives every call the program's initial state:
    module-level caches (``functools.lru_cache``'d warn-once helpers, registries)
    and module state cannot carry over from one phase or input set to the next.
    Returns the results and the text the first import printed.
    """
    results: list[Any] = []
    printed_first = ""
    index, count = 0, 1
    while index < count:
        module, printed = load_program(path, module_name)
        printed_first = printed_first or printed
        seed_everything()
        fn, input_sets = module.make()
        count = len(input_sets)
        if count == 0:
            raise ValueError("make() returned no input sets")
        results.append(action(fn, tuple(input_sets[index])))
        index += 1
    return results, printed_first


@contextlib.contextmanager
def _dynamo_state_restored() -> Iterator[None]:
    """Undo whatever a program did to Dynamo's config (e.g. capture_scalar_outputs at import)."""
    saved = torch._dynamo.config.save_config()
    try:
        yield
    finally:
        torch._dynamo.config.load_config(saved)
        torch._dynamo.reset()


class _TracedLines(logging.Handler):
    """Lines of one file that Dynamo traced, from the ``trace_source`` artifact ("TRACE starts_line FILE:LINE in ...").

    A line Dynamo never traced, in a frame it gave up on (a break in a loop
    makes it run the whole frame eagerly) or in a branch no input set takes,
    cannot have a logged break, whatever is written there: the score keeps
    findings on such lines apart from findings Dynamo disproved.
    """

    PREFIX = "TRACE starts_line "

    def __init__(self, target: str) -> None:
        super().__init__(logging.DEBUG)
        self.target = target
        self.lines: set[int] = set()

    def emit(self, record: logging.LogRecord) -> None:
        header = record.getMessage().partition("\n")[0]
        if not header.startswith(self.PREFIX):
            return
        location = header[len(self.PREFIX) :].partition(" in ")[0]
        filename, _, line = location.rpartition(":")
        if line.isdigit() and os.path.realpath(filename) == self.target:
            self.lines.add(int(line))


@contextlib.contextmanager
def _traced_lines_of(target: str) -> Iterator[_TracedLines]:
    """Collect the lines of *target* Dynamo traces; the loggers are put back as they were."""
    handler = _TracedLines(target)
    with breaks.artifact_log_to(handler, breaks.artifact_loggers("__trace_source")):
        yield handler


def _logged_call(
    fn: Callable[..., Any], args: tuple[Any, ...], target: str
) -> tuple[set[Site], int, Outcome, set[int]]:
    """Compile ``fn`` afresh, call it once, and parse the graph_breaks log of that call (and the lines it traced)."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=BACKEND)
    seed_everything()
    with breaks._captured_graph_break_log() as collector, breaks._fresh_compilation_metrics(), \
            _traced_lines_of(target) as traced:
        outcome = observe(compiled, args)
    occurrences = breaks._occurrences_from_log(collector.messages, collector.positions)
    local = {
        Site(site.line, site.gb_id or "GB????", site.reason)
        for site, _ in occurrences
        if os.path.realpath(site.filename) == target
    }
    foreign = sum(1 for site, _ in occurrences if os.path.realpath(site.filename) != target)
    return local, foreign, outcome, traced.lines


def _fullgraph_failure(fn: Callable[..., Any], args: tuple[Any, ...], eager: Outcome | None) -> str | None:
    """``None`` when ``torch.compile(fn, fullgraph=True)`` traces and runs this input set.

    An exception of the program's own (the type eager raises too) is behaviour,
    not a tracing failure.
    """
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=BACKEND)
    seed_everything()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            compiled(*args)
    except Exception as error:
        if eager is not None and eager.error is not None and eager.error[0] == type(error).__name__:
            return None
        first = (str(error).strip().splitlines() or [""])[0]
        return f"{type(error).__name__}: {first[:200]}"
    return None


def measure(path: Path, module_name: str, behaviour: bool, skip_clean_fullgraph: bool = False) -> Measurement:
    """Logged break sites of ``path`` over all its input sets; with ``behaviour``, also eager outcomes and fullgraph.

    ``skip_clean_fullgraph`` trusts a run that logged no break at all to pass
    ``fullgraph=True`` instead of compiling it again (used for unchanged originals;
    fixed files are always compiled with ``fullgraph=True``).
    """
    result = Measurement()
    target = os.path.realpath(path)
    with _dynamo_state_restored():
        try:
            module, _ = load_program(path, module_name)
            result.declared_raises = {int(k): str(v) for k, v in getattr(module, "RAISING_INPUTS", {}).items()}
            if behaviour:
                result.eager, result.import_stdout = _per_input(path, module_name, observe)
            logged, printed = _per_input(path, module_name, lambda fn, args: _logged_call(fn, args, target))
            result.import_stdout = result.import_stdout or printed
            for sites, foreign, compiled, traced_lines in logged:
                result.sites |= sites
                result.foreign_sites += foreign
                result.compiled.append(compiled)
                result.traced_lines |= traced_lines
            if behaviour and (result.sites or result.foreign_sites or not skip_clean_fullgraph):
                eager = iter(result.eager)
                result.fullgraph, _ = _per_input(path, module_name, lambda fn, args: _fullgraph_failure(fn, args, next(eager)))
            elif behaviour:
                # Dynamo logged no break anywhere: nothing for fullgraph=True to refuse.
                result.fullgraph = [None] * len(result.eager)
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0]
            result.error = f"{type(error).__name__}: {first[:300]}"
        finally:
            sys.modules.pop(module_name, None)
    return result
