"""Run one program file under Dynamo: logged break sites, fullgraph success, eager and compiled behaviour.

This module runs inside a worker process (``worker.py``) and imports torch.
Break capture is graphmend_lint's own (``graphmend_lint.verify.breaks``): the
``graph_breaks`` logging artifact is collected and parsed by its helpers. The
call itself is made here rather than through ``capture_breaks`` because a
program may raise on purpose (a validation guard taking its raising side), and
``capture_breaks`` drops everything it logged when the call raises.

Every call imports the program afresh, builds its callable with ``make()`` and
seeds every RNG first (and again right before the call), so module state
(warn-once caches, running stats) cannot leak from one call into the next, and
the original and the fixed file see the same numbers, dropout masks included.
Eager outcomes are taken first (with behaviour), then the logged compiled
run, then ``fullgraph=True`` for the input sets whose logged run leaves the
verdict open (``_logged_then_whole_graph``).

A program whose callable is an ``nn.Module`` with any submodule in eval mode
(``Model(cfg).eval()``) is measured twice: as ``make()`` builds it, then, from
a fresh import and ``make()``, after ``.train()`` (issue 14: a break in a
branch only training takes is a break users hit). Its logged sites and traced
lines are the union of both runs; ``Measurement.train`` keeps the training run
apart so a report can say which sites only training logs. A module already in
training mode everywhere, or a function, is measured once (a second run would
repeat the first).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import random
import sys
import traceback
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


#: Dynamo's id for an exception leaving the frame it traces ("Observed exception").
OBSERVED_EXCEPTION = "GB0088"


def error_path_sites(sites: set[Site], compiled: Outcome, declared: str | None) -> set[Site]:
    """The sites of one call that are its declared exception leaving the compiled frame, not graph breaks.

    When an input set raises the exception the program declares for it
    (``RAISING_INPUTS``: a validation guard taking its raising side), Dynamo
    logs "Observed exception" where the exception leaves the traced frame.
    That is the program's error path: the call fails in eager mode too, and
    ``fullgraph=True`` raising the same type counts as behaviour, not a tracing
    failure (``_fullgraph_failure``). Truth leaves these sites out for the same
    reason; any other site of such a call (a branch before the ``raise``) is a
    break as usual, and so is "Observed exception" on an input set that does
    not raise (e.g. ``data_ptr()``, which raises inside Dynamo only).
    """
    if compiled.error is None or compiled.error[0] != declared:
        return set()
    return {site for site in sites if site.gb_id == OBSERVED_EXCEPTION}


#: Why a program got no training-mode run (``TrainRun.skipped``).
NOT_A_MODULE = "not an nn.Module"
ALREADY_TRAINING = "built in training mode"


@dataclass
class Run:
    """One pass over every input set in one mode: logged sites, traced lines, and (with behaviour) outcomes."""

    sites: set[Site] = field(default_factory=set)
    #: Distinct (file, line, GB id) logged with a user frame outside the program file: library code it calls
    #: (a fix that moves a break into torch's own modules has not removed it).
    foreign_sites: set[tuple[str, int, str]] = field(default_factory=set)
    traced_lines: set[int] = field(default_factory=set)  # lines of the program file Dynamo traced (any input set)
    #: "Observed exception" sites of input sets that raise what the program declares (``error_path_sites``).
    error_path_sites: set[Site] = field(default_factory=set)
    fullgraph: list[str | None] = field(default_factory=list)  # per input set: None, or the failure
    eager: list[Outcome] = field(default_factory=list)
    compiled: list[Outcome] = field(default_factory=list)


@dataclass
class TrainRun(Run):
    """The same input sets after ``.train()``, or why there was no such run.

    ``unrunnable`` holds the input sets that eager execution cannot run in
    training mode (an exception the program does not declare for that input
    set in ``RAISING_INPUTS``, e.g. batch norm on a batch of one): their logged
    sites and traced lines are left out, since no user runs that path.
    ``error``: making the module or ``.train()`` itself failed.
    """

    skipped: str | None = None  # NOT_A_MODULE, ALREADY_TRAINING, or None when it ran
    error: str | None = None
    unrunnable: dict[int, str] = field(default_factory=dict)


@dataclass
class Measurement(Run):
    """What Dynamo and eager execution did with one program file.

    ``sites``/``foreign_sites``/``traced_lines`` are the union of the built and
    the training run; the other ``Run`` fields are the run as built.
    """

    error: str | None = None  # the file does not import, make() fails, ...
    built_sites: set[Site] = field(default_factory=set)  # logged by the run as built
    train: TrainRun = field(default_factory=TrainRun)
    import_stdout: str = ""
    declared_raises: dict[int, str] = field(default_factory=dict)  # the program's RAISING_INPUTS
    #: Floating dtypes of the inputs and of the module's parameters and buffers (``float_dtypes``).
    float_dtypes: set[str] = field(default_factory=set)


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


Action = Callable[[Callable[..., Any], tuple[Any, ...]], Any]


def _call_at(path: Path, module_name: str, index: int, action: Action, train: bool) -> tuple[Any, int, str]:
    """Import the program afresh, ``make()`` its callable (``.train()`` it if asked), run ``action`` on input ``index``.

    A fresh import per call gives every call the program's initial state:
    module-level caches (``functools.lru_cache``'d warn-once helpers, registries)
    and module state cannot carry over from one phase, mode or input set to the
    next. The RNGs are seeded before ``make()`` and again right before the
    call, so every phase draws the same dropout masks and noise. Returns the
    result, the number of input sets and the text the import printed.
    """
    module, printed = load_program(path, module_name)
    seed_everything()
    fn, input_sets = module.make()
    if not input_sets:
        raise ValueError("make() returned no input sets")
    if train:
        fn.train()
    seed_everything()
    return action(fn, tuple(input_sets[index])), len(input_sets), printed


def _per_input(path: Path, module_name: str, action: Action, train: bool = False) -> tuple[list[Any], str]:
    """Run ``action(fn, args)`` once per input set (see ``_call_at``); the results and the first import's output."""
    result, count, printed = _call_at(path, module_name, 0, action, train)
    results = [result]
    for index in range(1, count):
        results.append(_call_at(path, module_name, index, action, train)[0])
    return results, printed


def float_dtypes(fn: Any, input_sets: Any) -> set[str]:
    """The floating dtypes a program runs with: of its input tensors (nested in containers) and module state.

    A finding gated on a dtype (``if x.dtype == torch.float16 and torch.isinf(x).any()``
    breaks only in fp16) is neither confirmed nor refuted by a program that never
    runs that dtype; the score needs to know which ones it ran.
    """
    tensors = list(_tensors_in(input_sets))
    if isinstance(fn, torch.nn.Module):
        tensors += [*fn.parameters(), *fn.buffers()]
    return {str(tensor.dtype).removeprefix("torch.") for tensor in tensors if tensor.is_floating_point()}


def _tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """Tensors in *value* and in the tuples, lists and dicts nested in it."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)


def train_skip_reason(fn: Any) -> str | None:
    """Why a callable needs no training-mode run (``None``: it is a module with a submodule in eval mode)."""
    if not isinstance(fn, torch.nn.Module):
        return NOT_A_MODULE
    if all(module.training for module in fn.modules()):
        return ALREADY_TRAINING
    return None


@contextlib.contextmanager
def _dynamo_state_restored() -> Iterator[None]:
    """Undo whatever a program did to Dynamo's config (e.g. capture_scalar_outputs at import) and to torch's
    process-wide defaults.

    pytorch#105269's repro calls ``torch.set_default_device("cpu")`` at import, which installs a torch function
    mode for the rest of the process: the next program measured in the same worker (D-FINE's matcher) then
    logged no break at all, and alone it logs four (seen 2026-12-01).
    """
    saved = torch._dynamo.config.save_config()
    device_context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    default_dtype = torch.get_default_dtype()
    grad_enabled = torch.is_grad_enabled()
    try:
        yield
    finally:
        if getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is not device_context:
            torch.set_default_device(None if device_context is None else device_context.device)
        torch.set_default_dtype(default_dtype)
        torch.set_grad_enabled(grad_enabled)
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
        if line.isdigit() and _is_program_file(filename, self.target):
            self.lines.add(int(line))


def _is_program_file(filename: str, target: str) -> bool:
    """*filename* is the measured program, or a copy of it a variant measured earlier in this worker wrote.

    The variants of a program (``--fix``, ``--fix --unsafe-fixes``) are files of the same name in other
    folders, measured one after the other in one process. CPython code objects that differ only in
    ``co_filename`` compare equal, and a Dynamo cache keyed by code objects survives
    ``torch._dynamo.reset()``: a comprehension left unchanged by a fix is then run as the copy measured
    first, and its break is logged under that copy's path (measured: LightGlue's ``t[mask]`` at the same
    line of the safe copy, logged while measuring the unsafe one, which logs it in its own file when
    measured alone). Program names are unique in the corpus, so the name decides.
    """
    return os.path.realpath(filename) == target or Path(filename).name == Path(target).name


@contextlib.contextmanager
def _traced_lines_of(target: str) -> Iterator[_TracedLines]:
    """Collect the lines of *target* Dynamo traces; the loggers are put back as they were."""
    handler = _TracedLines(target)
    with breaks.artifact_log_to(handler, breaks.artifact_loggers("__trace_source")):
        yield handler


@dataclass
class _CompiledCall:
    """One compiled call of one input set: its logged sites, outcome and traced lines, and what it raised."""

    sites: set[Site]
    foreign_sites: set[tuple[str, int, str]]
    outcome: Outcome
    traced_lines: set[int]
    raised: Exception | None


def _compiled_call(fn: Callable[..., Any], args: tuple[Any, ...], target: str, fullgraph: bool) -> _CompiledCall:
    """Compile ``fn`` afresh, call it once, and parse the graph_breaks log of that call (and the lines it traced)."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=fullgraph, backend=BACKEND)
    raised: list[Exception] = []

    def call(*call_args: Any) -> Any:
        try:
            return compiled(*call_args)
        except Exception as error:  # kept whole: a fullgraph failure is judged by the user exception inside it
            raised.append(error)
            raise

    with breaks._captured_graph_break_log() as collector, breaks._fresh_compilation_metrics(), \
            _traced_lines_of(target) as traced:
        outcome = observe(call, args)
    occurrences = breaks._occurrences_from_log(collector.messages, collector.positions)
    local = {
        Site(site.line, site.gb_id or "GB????", site.reason)
        for site, _ in occurrences
        if _is_program_file(site.filename, target)
    }
    foreign = {
        (os.path.realpath(site.filename), site.line, site.gb_id or "GB????")
        for site, _ in occurrences
        if not _is_program_file(site.filename, target)
    }
    return _CompiledCall(local, foreign, outcome, traced.lines, raised[0] if raised else None)


def _fullgraph_failure(raised: Exception | None, eager: Outcome) -> str | None:
    """``None`` when a ``fullgraph=True`` call raised nothing, or only what the eager call raises too.

    An exception of the program's own (the type eager raises too) is behaviour,
    not a tracing failure.
    """
    if raised is None or (eager.error is not None and eager.error[0] in _raised_types(raised)):
        return None
    return _first_line(raised, 200)


def _raised_types(error: BaseException) -> set[str]:
    """The type of *error*, and the user exception inside it when ``fullgraph=True`` wrapped one.

    torch 2.13 does not let a user exception leave a ``fullgraph=True`` region
    as itself: it raises ``Unsupported("Observed exception")`` whose cause is
    Dynamo's stand-in for the user's type (``ObservedValueErrorError`` for a
    ``ValueError``). That is the program's error path, as in eager mode.
    """
    names = {type(error).__name__}
    cause = error.__cause__
    if isinstance(cause, torch._dynamo.exc.ObservedException):
        names |= {raised.__name__ for raised, observed in torch._dynamo.exc.observed_exception_map.items()
                  if type(cause) is observed}
    return names


def _measure_run(run: Run, path: Path, module_name: str, behaviour: bool, declared: dict[int, str]) -> None:
    """Fill ``run`` with one pass over every input set: as built, or after ``.train()`` for a ``TrainRun``."""
    train = isinstance(run, TrainRun)
    if behaviour:
        run.eager, _ = _per_input(path, module_name, observe, train)
        calls, run.fullgraph = _logged_then_whole_graph(path, module_name, run.eager, train)
    else:
        target = os.path.realpath(path)
        calls, _ = _per_input(path, module_name, lambda fn, args: _compiled_call(fn, args, target, False), train)
    unrunnable = _unrunnable_in_training(run, path, module_name, calls, declared) if train else {}
    for index, call in enumerate(calls):
        run.compiled.append(call.outcome)
        if index in unrunnable:
            continue
        error_path = error_path_sites(call.sites, call.outcome, declared.get(index))
        run.error_path_sites |= error_path
        run.sites |= call.sites - error_path
        run.foreign_sites |= call.foreign_sites
        run.traced_lines |= call.traced_lines
    run.error_path_sites -= run.sites  # logged by an input set that does not raise too: a break
    if train:
        run.unrunnable = unrunnable
    for index in unrunnable if behaviour else ():
        run.fullgraph[index] = None  # not a path anyone runs: not held against the program


def _logged_then_whole_graph(
    path: Path, module_name: str, eager: list[Outcome], train: bool
) -> tuple[list[_CompiledCall], list[str | None]]:
    """Per input set, the logged compiled call, and the ``fullgraph=True`` verdict where the logged call leaves one open.

    An input set whose logged call logged no break (here or in library code),
    raised nothing and traced the program traced as one graph, so
    ``fullgraph=True`` has nothing to refuse and is not compiled again (most of
    a fixed copy's input sets; 453 s -> 356 s on every 20th corpus program). The converse does
    not hold, so the logged call cannot be skipped instead: torch 2.13's
    ``fullgraph=True`` traces data-dependent operators (``nonzero``, ``.item()``,
    a boolean mask) that the same call without it logs as breaks (GB0036,
    GB0124, GB0033; measured 2026-12-02 on eight dev programs).
    """
    target = os.path.realpath(path)
    calls, _ = _per_input(path, module_name, lambda fn, args: _compiled_call(fn, args, target, False), train)
    verdicts = [
        None if call.traced_lines and not (call.sites or call.foreign_sites or call.raised)
        else _fullgraph_failure(
            _call_at(path, module_name, index, lambda fn, args: _compiled_call(fn, args, target, True), train)[0].raised,
            eager[index],
        )
        for index, call in enumerate(calls)
    ]
    return calls, verdicts


def _unrunnable_in_training(
    run: Run, path: Path, module_name: str, calls: list[_CompiledCall], declared: dict[int, str]
) -> dict[int, str]:
    """Input sets whose eager run in training mode raises an exception the program does not declare there.

    Eager outcomes are taken from ``run.eager`` when the behaviour phase ran,
    else only for the input sets whose compiled call raised (a compiled call
    that runs means eager runs too: the eager backend executes the same ops).
    """
    unrunnable = {}
    for index, call in enumerate(calls):
        if call.outcome.error is None:
            continue
        if run.eager:
            eager = run.eager[index]
        else:
            eager = _call_at(path, module_name, index, observe, train=True)[0]
        if eager.error is not None and eager.error[0] != declared.get(index):
            unrunnable[index] = f"{eager.error[0]}: {eager.error[1][:200]}"
    return unrunnable


def measure(path: Path, module_name: str, behaviour: bool) -> Measurement:
    """Logged break sites of ``path`` over all its input sets; with ``behaviour``, also eager outcomes and fullgraph.

    A module with a submodule in eval mode is measured again after ``.train()``
    (``Measurement.train``); its sites and traced lines join the union.
    """
    result = Measurement()
    with _dynamo_state_restored():
        try:
            module, result.import_stdout = load_program(path, module_name)
            result.declared_raises = {int(k): str(v) for k, v in getattr(module, "RAISING_INPUTS", {}).items()}
            _measure_run(result, path, module_name, behaviour, result.declared_raises)
            result.built_sites = set(result.sites)
            seed_everything()
            fn, input_sets = module.make()
            result.float_dtypes = float_dtypes(fn, input_sets)
            result.train.skipped = train_skip_reason(fn)
            if result.train.skipped is None:
                _measure_train(result, path, module_name, behaviour)
        except Exception as error:
            result.error = _first_line(error, 300) + _raised_at(error)
        finally:
            sys.modules.pop(module_name, None)
    return result


def _measure_train(result: Measurement, path: Path, module_name: str, behaviour: bool) -> None:
    """The training-mode run; a failure is recorded in ``result.train.error``, never raised."""
    try:
        _measure_run(result.train, path, module_name, behaviour, result.declared_raises)
    except Exception as error:
        result.train = TrainRun(error=_first_line(error, 300))
        return
    result.sites |= result.train.sites
    result.error_path_sites = (result.error_path_sites | result.train.error_path_sites) - result.sites
    result.foreign_sites |= result.train.foreign_sites
    result.traced_lines |= result.train.traced_lines


def _raised_at(error: BaseException) -> str:
    """`` [at FILE:LINE in FUNC]``, the innermost frame: an error the harness did not expect must be traceable from the log."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    return f" [at {Path(frame.filename).name}:{frame.lineno} in {frame.name}]"


def _first_line(error: BaseException, limit: int) -> str:
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first[:limit]}"
