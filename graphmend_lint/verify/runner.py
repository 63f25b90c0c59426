"""Verify one target: run both arms in fresh subprocesses, then compare and reconcile.

The parent never imports torch. The original arm runs first and saves its
outputs; the fixed arm compares against them. Arms run one after the other
on purpose: in parallel they would share the cores and skew each other's
timings. Both :mod:`.cli` and :mod:`.rollback` verify through
:func:`verify_target`, differing only in the transforms of the two arms.

Two kinds of extra arm processes: with ``bench``, a few per arm that only
time the cold start (:meth:`TargetSession.cold_starts`); and, for
reconciliation, one per applied fix when the fixes removed breaks that no
finding is on, to see which fix removed which (:func:`_fix_attribution`).
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import graphmend_lint
from graphmend_lint.config import Settings
from graphmend_lint.verify.arm import PROGRESS_PREFIX, ArmSpec
from graphmend_lint.verify.bench import BenchOptions
from graphmend_lint.verify.hook import LinterTransform, SingleFixTransform, Transform
from graphmend_lint.verify.reconcile import (
    Finding,
    FindingKey,
    Reconciliation,
    Site,
    SiteKey,
    reconcile,
    removed_sites,
)
from graphmend_lint.verify.results import ArmResult, BreakInfo, ColdStarts, TargetResult
from graphmend_lint.verify.targets import TargetSpec

if TYPE_CHECKING:
    from graphmend_lint.verify.static import SettledScope

Progress = Callable[[str], None]
_TAIL_LINES = 40
#: Reconciliation runs at most this many extra fixed arms, one fix applied each.
MAX_ATTRIBUTION_ARMS = 6


@dataclass(frozen=True)
class ArmPlan:
    """Which modules an arm compiles through the hook, and with what transform."""

    scope_modules: tuple[str, ...]
    transform: Transform


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by both arms of every target."""

    seed: int = 0
    device: str = "auto"
    grad: bool = False
    train: bool = False
    atol: float | None = None
    rtol: float | None = None
    bench: BenchOptions | None = None
    timeout_s: float = 1800.0
    verbose: bool = False
    threads: int | None = None
    cold_runs: int = 3  # fresh processes per arm timing the cold start (with ``bench``)
    recompiles: bool = False  # count recompilations too (see :mod:`.recompiles`)


class ArmCrashed(Exception):
    """The arm process ended without writing a result (crash, timeout)."""


class ArmError(Exception):
    """The original arm could not run: the target cannot be verified (exit 2)."""


def _environment(cache_dir: Path) -> dict[str, str]:
    """The arm's environment: offline hub, this graphmend_lint importable first, private compile caches.

    Inductor and Triton keep compiled kernels in on-disk caches shared by
    every process; without a fresh cache per arm the second arm would reuse
    the first one's kernels and its "cold" start would not be cold.
    """
    package_root = str(Path(graphmend_lint.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir / "inductor")
    env["TRITON_CACHE_DIR"] = str(cache_dir / "triton")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, os.getcwd(), env.get("PYTHONPATH", "")]))
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def run_arm_process(spec: ArmSpec, directory: Path, options: RunOptions, progress: Progress) -> dict[str, Any]:
    """Spawn ``python -m graphmend_lint.verify.arm`` and return its JSON result.

    The arm's stdout and stderr are merged and read line by line: progress
    lines are relayed at once, the rest is kept (the last lines, or all of
    them with ``verbose``) so that a crash can be explained.
    """
    spec_path = directory / f"{spec.role}.spec.pickle"
    spec_path.write_bytes(pickle.dumps(spec))
    Path(spec.result_path).unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "graphmend_lint.verify.arm", str(spec_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env=_environment(directory / f"{Path(spec.result_path).stem}-caches"),
    )
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        process.kill()

    killer = threading.Timer(options.timeout_s, kill)
    killer.start()
    tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(PROGRESS_PREFIX):
                progress(line[len(PROGRESS_PREFIX) :].rstrip())
            else:
                tail.append(line.rstrip())
                if options.verbose:
                    progress(f"  | {line.rstrip()}")
        code = process.wait()
    finally:
        killer.cancel()
        if process.poll() is None:  # interrupted while reading: do not leave the arm running
            process.kill()
            process.wait()
    result_path = Path(spec.result_path)
    if not result_path.exists():
        why = f"timed out after {options.timeout_s:g}s" if timed_out.is_set() else f"exited with code {code}"
        raise ArmCrashed(f"the {spec.role} arm {why} without a result:\n" + "\n".join(tail))
    return json.loads(result_path.read_text(encoding="utf-8"))


def _error_text(data: dict[str, Any], verbose: bool) -> str:
    """The arm's error in one line (user errors name themselves; others say which phase failed)."""
    error = data["error"]
    text = error["message"] if error["kind"] == "target" else f"{error['kind']} failed: {error['message']}"
    if verbose and error.get("traceback"):
        text += "\n" + error["traceback"]
    return text


class TargetSession:
    """Arms of one target sharing a temp directory: one original, any number of fixed.

    The original arm's saved outputs are what every fixed arm compares with,
    so rollback can try several fixed variants against a single original run.
    """

    def __init__(self, target: TargetSpec, options: RunOptions, progress: Progress) -> None:
        self.target = target
        self.options = options
        self.progress = progress
        self._tmp = tempfile.TemporaryDirectory(prefix="graphmend-verify-")
        self.directory = Path(self._tmp.name)
        self._fixed_runs = 0

    def __enter__(self) -> TargetSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def _spec(
        self, role: str, plan: ArmPlan, result_name: str, cold_only: bool = False, fullgraph: bool = True
    ) -> ArmSpec:
        options = self.options
        return ArmSpec(
            role=role,
            target=self.target,
            scope_modules=plan.scope_modules,
            transform=plan.transform,
            result_path=str(self.directory / result_name),
            outputs_path=str(self.directory / "original_outputs.pt"),
            seed=options.seed,
            device=options.device,
            grad=options.grad,
            train=options.train,
            atol=options.atol,
            rtol=options.rtol,
            bench=options.bench,
            threads=options.threads,
            cold_only=cold_only,
            fullgraph=fullgraph,
            recompiles=options.recompiles,
        )

    def run_original(self, plan: ArmPlan, fullgraph: bool = True) -> ArmResult:
        """Run the original arm; raises :class:`ArmError` when it cannot run."""
        spec = self._spec("original", plan, "original.json", fullgraph=fullgraph)
        data = run_arm_process(spec, self.directory, self.options, self.progress)
        if "error" in data:
            raise ArmError(_error_text(data, self.options.verbose))
        return ArmResult.from_json(data)

    def run_fixed(self, plan: ArmPlan, label: str = "fixed", fullgraph: bool = True) -> ArmResult | str:
        """Run a fixed arm after :meth:`run_original`; a string says why the fixed code failed."""
        self._fixed_runs += 1
        spec = self._spec(label, plan, f"fixed{self._fixed_runs}.json", fullgraph=fullgraph)
        try:
            data = run_arm_process(spec, self.directory, self.options, self.progress)
        except ArmCrashed as crash:  # the original ran, so the fixed code is to blame
            return str(crash)
        return _error_text(data, self.options.verbose) if "error" in data else ArmResult.from_json(data)

    def cold_starts(self, original: ArmPlan, fixed: ArmPlan) -> ColdStarts:
        """Time the first compiled call in ``cold_runs`` fresh processes per arm, the arms interleaved.

        One process's cold start swings with whatever else the machine does
        (14.8 s and 16.4 s for two identical arms of biogpt on the 2-core VM),
        so several are taken and their spread reported. Interleaving puts a
        slow spell of the machine into both arms rather than one.
        """
        samples: dict[str, list[float]] = {"original": [], "fixed": []}
        runs = self.options.cold_runs
        for run in range(1, runs + 1):
            for role, plan in (("original", original), ("fixed", fixed)):
                self.progress(f"[bench] cold start {run}/{runs}, {role}: a fresh process compiles the first call")
                spec = self._spec(role, plan, f"cold-{role}-{run}.json", cold_only=True)
                data = run_arm_process(spec, self.directory, self.options, self.progress)
                if "error" in data:
                    raise ArmError(_error_text(data, self.options.verbose))
                samples[role].append(float(data["cold_s"]))
                self.progress(f"[bench] cold start {run}/{runs}, {role}: {data['cold_s']:.2f} s")
        return ColdStarts(tuple(samples["original"]), tuple(samples["fixed"]))


def verify_target(
    target: TargetSpec,
    original: ArmPlan,
    fixed: ArmPlan,
    options: RunOptions,
    lint_settings: Settings | None,
    progress: Progress,
) -> TargetResult:
    """Both arms of one target, their comparison, cold starts and (with ``lint_settings``) reconciliation."""
    result = TargetResult(target.text)
    with TargetSession(target, options, progress) as session:
        try:
            result.original = session.run_original(original)
            scope = _ScopeLint(result.original, original.transform)
            fixed = _with_seeds(fixed, scope)
            outcome = session.run_fixed(fixed)
        except (ArmError, ArmCrashed) as error:
            result.error = str(error)
            return result
        if isinstance(outcome, str):
            result.fixed_error = outcome
        else:
            result.fixed = outcome
            if options.bench is not None:
                try:
                    result.cold = session.cold_starts(original, fixed)
                except (ArmError, ArmCrashed) as error:
                    result.error = f"cold start: {error}"
        if lint_settings is not None:
            _reconcile_into(result, scope, lint_settings, session, fixed)
    return result


def verify_variants(
    target: TargetSpec, original: ArmPlan, variants: dict[str, ArmPlan], options: RunOptions, progress: Progress
) -> tuple[ArmResult | str, dict[str, TargetResult | None]]:
    """One original arm, then one fixed arm per variant (e.g. safe and unsafe fixes), each compared with it.

    For measuring several fix levels of one model (``benchmarks/hf_census.py``)
    without re-running the original for each. A variant whose transform
    changes none of the texts the original arm compiled is not run: its
    value is ``None`` (it would run the original code). No reconciliation.
    Returns the original arm (or why it could not run) and the variants.
    """
    results: dict[str, TargetResult | None] = {}
    with TargetSession(target, options, progress) as session:
        try:
            arm = session.run_original(original)
        except (ArmError, ArmCrashed) as error:
            return str(error), results
        scope = _ScopeLint(arm, original.transform)
        for label, plan in variants.items():
            plan = _with_seeds(plan, scope)
            if all(plan.transform(text, path) == text for path, text in scope.texts.items()):
                results[label] = None
                continue
            result = TargetResult(target.text, original=arm)
            outcome = session.run_fixed(plan, label)
            if isinstance(outcome, str):
                result.fixed_error = outcome
            else:
                result.fixed = outcome
            results[label] = result
    return arm, results


class _ScopeLint:
    """The scope texts the original arm compiled, linted together once per settings.

    The fixer's seeds and reconciliation's findings come from the same lint
    when (as from the CLI) they use the same settings.
    """

    def __init__(self, arm: ArmResult, transform: Transform) -> None:
        self.arm = arm
        self.texts = {m["filename"]: transform(_read_source(m["filename"]), m["filename"]) for m in arm.modules}
        self._done: list[tuple[Settings, SettledScope]] = []

    def settled(self, settings: Settings) -> SettledScope:
        from graphmend_lint.verify.static import settle

        for known, settled in self._done:
            if known == settings:
                return settled
        settled = settle(self.texts, settings, _entries(self.arm))
        self._done.append((settings, settled))
        return settled


def _entries(arm: ArmResult) -> tuple[str, ...]:
    return (arm.entry,) if arm.entry else ()


def _with_seeds(plan: ArmPlan, scope: _ScopeLint) -> ArmPlan:
    """Tell the linter's fixer what verify compiles in each scope module (learnt from the original arm).

    The original arm names the callable and the scope modules it imported;
    linting those texts together routes the callable's calls across them.
    """
    if not isinstance(plan.transform, LinterTransform):
        return plan
    transform = plan.transform
    return replace(plan, transform=replace(transform, seeds=scope.settled(transform.settings).seeds))


def _reconcile_into(
    result: TargetResult, scope: _ScopeLint, settings: Settings, session: TargetSession, fixed: ArmPlan
) -> None:
    """Pair the original arm's breaks with the findings in the texts it compiled (see :mod:`.reconcile`)."""
    from graphmend_lint.verify.static import findings_of, gb_families

    arm = scope.arm
    started = time.perf_counter()
    try:
        settled = scope.settled(settings)
        findings = findings_of(settled, bool(settings.unsafe_fixes))
        families = gb_families()
    except Exception as error:  # the linter failing must not hide the Dynamo measurements
        result.reconciliation_error = f"{type(error).__name__}: {error}"
        return
    session.progress(f"[static] linted {len(scope.texts)} scope file(s) in {time.perf_counter() - started:.1f}s")
    sites = [_site(b) for b in arm.breaks]
    by_line = reconcile(sites, findings, scope.texts, arm.executed, families)
    removed_by = _fix_attribution(result, by_line, findings, scope, session, fixed)
    result.reconciliation = reconcile(sites, findings, scope.texts, arm.executed, families, removed_by)


def _site(info: BreakInfo) -> Site:
    return Site(info.filename, info.line, info.gb_id, info.reason, info.splits)


def _removed(before: ArmResult, after: ArmResult, scope: _ScopeLint) -> set[SiteKey]:
    texts = {path: (scope.texts[path], text) for path, text in after.fixed_texts.items() if path in scope.texts}
    return removed_sites([_site(b) for b in before.breaks], [_site(b) for b in after.breaks], texts)


def _fix_attribution(
    result: TargetResult,
    by_line: Reconciliation,
    findings: Sequence[Finding],
    scope: _ScopeLint,
    session: TargetSession,
    fixed: ArmPlan,
) -> dict[FindingKey, set[SiteKey]]:
    """Which sites each applied fix removes on its own, for the sites no finding covers by line.

    Needed only when the fixes removed a site that no finding is on. One
    candidate fix (one that applies and whose lines ran) takes them all;
    several get an arm each, applying that fix alone (at most
    :data:`MAX_ATTRIBUTION_ARMS`, nearest the sites first). A ``--transform``
    is not the linter's fixes, so there is nothing to attribute then.
    """
    transform = fixed.transform
    if result.original is None or result.fixed is None or not isinstance(transform, LinterTransform):
        return {}
    missed = {check.site.key for check in by_line.sites if check.status == "missed"}
    unexplained = missed & _removed(result.original, result.fixed, scope)
    ran = {path: set(lines) for path, lines in result.original.executed.items()}
    candidates = [
        f for f in findings
        if f.fixable and any(line in ran.get(f.filename, ()) for line in range(f.line, f.end_line + 1))
    ]
    if not unexplained or not candidates:
        return {}
    if len(candidates) == 1:
        return {candidates[0].key: unexplained}
    removed_by: dict[FindingKey, set[SiteKey]] = {}
    chosen = sorted(candidates, key=lambda f: min(abs(f.line - line) for _, line in unexplained))
    for index, finding in enumerate(chosen[:MAX_ATTRIBUTION_ARMS], 1):
        session.progress(f"[reconcile] {index}/{min(len(chosen), MAX_ATTRIBUTION_ARMS)}: which breaks does "
                         f"{finding.code} at {Path(finding.filename).name}:{finding.line} remove alone?")
        single = SingleFixTransform(transform.settings, transform.unsafe, finding.filename, finding.code,
                                    finding.line, transform.seeds)
        label = f"{finding.code} at :{finding.line} alone"
        alone = session.run_fixed(ArmPlan(fixed.scope_modules, single), label, fullgraph=False)
        if isinstance(alone, ArmResult):
            removed_by[finding.key] = unexplained & _removed(result.original, alone, scope)
    if len(chosen) > MAX_ATTRIBUTION_ARMS:
        session.progress(f"[reconcile] {len(chosen) - MAX_ATTRIBUTION_ARMS} more fixes not tried alone")
    return removed_by


def _read_source(filename: str) -> str:
    """The file's text exactly as the import hook decodes it."""
    return importlib.util.decode_source(Path(filename).read_bytes())
