"""One arm of a verification, run in its own fresh interpreter.

``python -m graphmend_lint.verify.arm SPEC`` reads a pickled :class:`ArmSpec`,
installs the import hook (identity for the original arm, the fixing
transform for the fixed arm), and then, each phase on a freshly built
workload under the same seed:

1. runs every input set eagerly, recording which lines of the scope files
   ran, and saves (original) or compares (fixed) the flattened outputs;
2. measures Dynamo's breaks over every input set (:mod:`.breaks`);
3. checks whether ``torch.compile(callable, fullgraph=True)`` runs every
   input set (the acid test: it fails on the first break Dynamo meets);
4. with ``bench``, times the compiled callable's steady state and the eager
   baseline.

An arm spec with ``cold_only`` instead builds the workload and times only
the first compiled call: cold start is measured in several such fresh
processes (:mod:`.runner`), since one process's number swings with the load.

The JSON result goes to ``spec.result_path``; the process exits 0 whenever it
could write one, errors included. A fresh process per arm matters: Dynamo
caches, imported modules and lazily initialised model state would otherwise
leak from one arm into the other.

Progress lines for the parent go to stderr with :data:`PROGRESS_PREFIX`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from types import FrameType
from typing import Any

PROGRESS_PREFIX = "@@graphmend-verify@@ "


class ArmFailure(Exception):
    """A phase failed; ``kind`` says which, for the parent's message and exit code."""

    def __init__(self, kind: str, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.trace = trace


@dataclass(frozen=True)
class ArmSpec:
    """Everything one arm needs; pickled by the parent."""

    role: str  # "original" or "fixed" (or a label of a fixed variant, shown in progress lines)
    target: Any  # TargetSpec
    scope_modules: tuple[str, ...]
    transform: Any  # Transform: (source, filename) -> source
    result_path: str
    outputs_path: str  # the original arm writes it, the fixed arm compares with it
    seed: int = 0
    device: str = "cpu"
    grad: bool = False
    train: bool = False  # .train(), autograd on, backward after each eager call, gradients compared (.training)
    atol: float | None = None
    rtol: float | None = None
    bench: Any = None  # BenchOptions or None
    threads: int | None = None  # torch.set_num_threads; None keeps torch's default
    cold_only: bool = False  # time the first compiled call and nothing else
    fullgraph: bool = True  # also check torch.compile(fullgraph=True) (reconciliation's extra arms skip it)
    recompiles: bool = False  # also count recompilations over the input sets (the break gate asks for it)


def progress(role: str, message: str) -> None:
    """One line for the parent to show while this arm works."""
    print(f"{PROGRESS_PREFIX}[{role}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _phase(kind: str) -> Iterator[None]:
    """Turn any exception of a phase into an :class:`ArmFailure` of that kind."""
    try:
        yield
    except ArmFailure:
        raise
    except Exception as error:
        from graphmend_lint.verify.targets import TargetError

        if isinstance(error, TargetError):
            raise ArmFailure("target", str(error)) from error
        message = f"{type(error).__name__}: {error}".strip()
        raise ArmFailure(kind, message, traceback.format_exc()) from error


class _LineRecorder:
    """Lines that ran in a set of files, via ``sys.settrace`` (only those files get a local tracer)."""

    def __init__(self, filenames: set[str]) -> None:
        self.filenames = filenames  # live: the hook adds files as modules load
        self.lines: dict[str, set[int]] = {}

    def _global(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if frame.f_code.co_filename in self.filenames:
            self.lines.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            self.lines[frame.f_code.co_filename].add(frame.f_lineno)
        return self._local

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        previous = sys.gettrace()
        sys.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(previous)


def _to_device(value: Any, device: str) -> Any:
    """Move a module, tensors and containers of them to ``device`` (a no-op on CPU)."""
    import torch

    if device == "cpu":
        return value
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def seed_everything(seed: int) -> None:
    """Seed every generator a forward may draw from: torch's, and numpy's and ``random``'s.

    transformers' SpecAugment (wav2vec2, HuBERT... in train mode) draws its masks with
    ``np.random``; seeding torch alone lets the two arms mask differently.
    """
    import random

    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy
    except ImportError:  # torch runs without numpy; then nothing draws from it
        return
    numpy.random.seed(seed)


def _fresh_workload(spec: ArmSpec) -> Any:
    """Build the workload again under the seed: each phase starts from the same state."""
    import torch

    from graphmend_lint.verify.targets import build_workload
    from graphmend_lint.verify.training import set_train_mode

    seed_everything(spec.seed)
    with _phase("factory"):
        workload = build_workload(spec.target)
        if spec.train:
            set_train_mode(workload.callable)
        workload.callable = _to_device(workload.callable, spec.device)
        workload.inputs = [_to_device(inputs, spec.device) for inputs in workload.inputs]
    return workload


def run_arm(spec: ArmSpec) -> dict[str, Any]:
    """Run every phase and return the JSON-able result (raises :class:`ArmFailure`)."""
    import torch

    from graphmend_lint.verify import compare
    from graphmend_lint.verify.breaks import capture_breaks_over
    from graphmend_lint.verify.environment import describe
    from graphmend_lint.verify.hook import installed
    from graphmend_lint.verify.targets import entry_qualname
    from graphmend_lint.verify.training import backward_gradients

    if spec.device == "auto":
        spec = replace(spec, device="cuda" if torch.cuda.is_available() else "cpu")
    if spec.threads is not None:
        torch.set_num_threads(spec.threads)
    result: dict[str, Any] = {"role": spec.role, "environment": describe(spec.device)}
    grad_mode = torch.enable_grad if spec.grad or spec.train else torch.no_grad
    if spec.cold_only:
        with _phase("setup"), installed(spec.scope_modules, spec.transform):
            result["cold_s"] = _cold_start(spec, grad_mode)
        return result
    with _phase("setup"), contextlib.ExitStack() as stack:
        finder = stack.enter_context(installed(spec.scope_modules, spec.transform))
        progress(spec.role, f"building {spec.target.text}")
        started = time.perf_counter()
        workload = _fresh_workload(spec)
        result["entry"] = entry_qualname(workload.callable)

        progress(spec.role, f"running {len(workload.inputs)} input set(s) eagerly")
        recorder = _LineRecorder(finder.filenames)
        outputs, gradients = [], []
        with _phase("callable"), grad_mode():
            for args, kwargs in workload.inputs:
                seed_everything(spec.seed)
                with recorder.recording():
                    value = workload.callable(*args, **kwargs)
                outputs.append(compare.flatten(value))
                if spec.train:
                    gradients.append(backward_gradients(workload.callable, value))
        atol = _first_set(spec.atol, workload.atol, compare.DEFAULT_ATOL)
        rtol = _first_set(spec.rtol, workload.rtol, compare.DEFAULT_RTOL)
        result["tolerances"] = {"atol": atol, "rtol": rtol}
        if spec.role == "original":
            torch.save({"outputs": outputs, "gradients": gradients}, spec.outputs_path)
        else:
            reference = torch.load(spec.outputs_path, weights_only=True)
            result["equivalence"] = asdict(compare.compare(reference["outputs"], outputs, atol, rtol))
            if spec.train:
                result["gradient_equivalence"] = asdict(
                    compare.compare(reference["gradients"], gradients, atol, rtol)
                )

        progress(spec.role, "compiling with Dynamo to measure graph breaks")
        workload = _fresh_workload(spec)
        with _phase("dynamo"), grad_mode():
            report = capture_breaks_over(
                workload.callable, workload.inputs, before_each=lambda: seed_everything(spec.seed)
            )
        result["breaks"] = breaks_json(report)

        if spec.recompiles:
            result["recompiles"] = _recompiles(spec, grad_mode)

        if spec.fullgraph:
            progress(spec.role, "checking torch.compile(fullgraph=True) on every input set")
            result["fullgraph"] = _fullgraph(spec, grad_mode)

        if spec.bench is not None:
            result["bench"] = _bench(spec, grad_mode)
        result["modules"] = [_module_json(m, spec.transform) for m in finder.loaded]
        result["executed"] = {name: sorted(lines) for name, lines in recorder.lines.items()}
        result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _module_json(module: Any, transform: Any) -> dict[str, Any]:
    """A scope module as compiled: the fixes applied and held back, and its text when a fix changed it.

    The fixed text lets the parent map the fixed arm's break lines back to
    the original lines (reconciliation), without fixing the file again.
    """
    data = {
        "name": module.name,
        "filename": module.filename,
        "changed": module.changed,
        "fixes": list(getattr(transform, "applied", {}).get(module.filename, ())),
        "held_back": list(getattr(transform, "held_back", {}).get(module.filename, ())),
    }
    if module.changed:
        data["text"] = module.text
    return data


def _fullgraph(spec: ArmSpec, grad_mode: Callable[[], Any]) -> dict[str, Any]:
    """Whether ``torch.compile(fullgraph=True)`` traces every input set, and the first error if not.

    The ``eager`` backend is enough: a full-graph failure is Dynamo's, raised
    while tracing, and no kernel needs compiling to see it.
    """
    import torch

    workload = _fresh_workload(spec)
    torch._dynamo.reset()
    compiled = torch.compile(workload.callable, fullgraph=True, backend="eager")
    with grad_mode():
        for args, kwargs in workload.inputs:
            seed_everything(spec.seed)
            try:
                compiled(*args, **kwargs)
            except Exception as error:  # Unsupported, UserError and whatever the traced code raises
                first_line = (str(error).strip().splitlines() or [""])[0]
                return {"passes": False, "error": f"{type(error).__name__}: {first_line}"}
    return {"passes": True, "error": ""}


def _recompiles(spec: ArmSpec, grad_mode: Callable[[], Any]) -> list[dict[str, Any]]:
    """Recompilations of one compiled callable over every input set, on a fresh workload."""
    import torch

    from graphmend_lint.verify.recompiles import count_recompiles

    progress(spec.role, "counting recompilations over the input sets")
    workload = _fresh_workload(spec)
    with _phase("dynamo"), grad_mode():
        found = count_recompiles(workload.callable, workload.inputs, before_each=lambda: seed_everything(spec.seed))
    return [asdict(recompile) for recompile in found]


def _first_set(*values: float | None) -> float:
    """The command line's tolerance, else the factory's, else the default."""
    return next(v for v in values if v is not None)


def breaks_json(report: Any) -> dict[str, Any]:
    """An arm's ``breaks``: graph counts and every logged site (the census scan writes the same)."""
    splitting = set(report.splitting_sites)
    return {
        "graph_count": report.graph_count,
        "explain_break_count": report.explain_break_count,
        "graph_break_count": report.splitting_count,
        "logged_sites": report.break_count,
        "breaks": [
            {"reason": s.reason, "gb_id": s.gb_id, "filename": s.filename, "line": s.line, "splits": s in splitting}
            for s in report.sites
        ],
        "skipped_frames": list(report.skipped_frames),
    }


def _bench(spec: ArmSpec, grad_mode: Callable[[], Any]) -> dict[str, Any]:
    """Steady state, compiled and eager (cold start is timed in fresh processes, see ``cold_only``)."""
    import torch

    from graphmend_lint.verify.bench import bench_compiled, bench_eager, timer_for

    options = spec.bench
    workload = _fresh_workload(spec)
    timer = timer_for(spec.device)
    calls = f"{options.warmup} warm-up + {options.iters} timed calls"
    with _phase("bench"), grad_mode():
        seed_everything(spec.seed)
        progress(spec.role, f"benchmarking torch.compile(backend={options.backend!r}, mode={options.mode!r}): "
                 f"compiling, then {calls}")
        compiled = bench_compiled(workload.callable, workload.inputs[0], options, timer)
        progress(spec.role, f"benchmarking eager: {calls}")
        eager = bench_eager(workload.callable, workload.inputs[0], options, timer)
    return {"device": timer.device, "compiled": asdict(compiled), "eager": asdict(eager)}


def _cold_start(spec: ArmSpec, grad_mode: Callable[[], Any]) -> float:
    """Seconds of the first compiled call in this fresh process, compilation included."""
    import torch

    from graphmend_lint.verify.bench import timer_for, wall_s

    options = spec.bench
    workload = _fresh_workload(spec)
    timer = timer_for(spec.device)
    args, kwargs = workload.inputs[0]
    with _phase("bench"), grad_mode():
        seed_everything(spec.seed)
        compiled = torch.compile(workload.callable, backend=options.backend, mode=options.mode)
        progress(spec.role, "cold start: compiling and running the first call")
        return wall_s(timer, lambda: compiled(*args, **kwargs))


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m graphmend_lint.verify.arm SPEC_PICKLE``."""
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 1:
        print("usage: python -m graphmend_lint.verify.arm SPEC_PICKLE", file=sys.stderr)
        return 2
    with open(arguments[0], "rb") as stream:
        spec: ArmSpec = pickle.load(stream)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        result = run_arm(spec)
    except ArmFailure as failure:
        error = {"kind": failure.kind, "message": str(failure), "traceback": failure.trace}
        result = {"role": spec.role, "error": error}
    with open(spec.result_path, "w", encoding="utf-8") as stream:
        json.dump(result, stream, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
