"""The break gate: measure each target's ORIGINAL code only, then store or compare its breaks.

``graphmend-lint verify --write-baseline FILE`` and ``--baseline FILE`` do
not fix anything: a CI gate asks "did this change add graph breaks or
recompilations?", so only the original arm runs (identity transform, half
the time of a full verify) and it also counts recompilations
(:mod:`.recompiles`). Comparison and the file format live in
:mod:`.baseline`, renderings in :mod:`.gate_report`.

Exit codes: 0 nothing grew (or the baseline was written), 1 some target has
a site or recompilation not in the baseline, 2 a target could not be measured.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from graphmend_lint.verify.baseline import Breaks, Comparison, Measurement, compare, measure
from graphmend_lint.verify.runner import ArmCrashed, ArmError, ArmPlan, RunOptions, TargetSession
from graphmend_lint.verify.targets import TargetSpec

EXIT_PASS, EXIT_GREW, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class GateRun:
    """One gate run: what was measured per target (by baseline key), and the comparisons when checking."""

    baseline: str
    writing: bool
    measured: Mapping[str, Measurement]
    errors: Mapping[str, str]  # target -> why it could not be measured
    comparisons: tuple[Comparison, ...] = ()

    @property
    def exit_code(self) -> int:
        if self.errors:
            return EXIT_ERROR
        return EXIT_GREW if any(c.grew for c in self.comparisons) else EXIT_PASS


def baseline_key(target: TargetSpec, root: str) -> str:
    """The name a target is stored under: a file target's path relative to the project root when inside it.

    ``/home/me/proj/model.py::factory`` and ``model.py::factory`` are one
    target, and a CI checkout in another folder must find it.
    """
    if target.kind == "file":
        location = os.path.abspath(target.location)
        project = os.path.abspath(root)
        if os.path.commonpath([location, project]) == project:
            return f"{os.path.relpath(location, project).replace(os.sep, '/')}::{target.name}"
    return target.text


def measure_original(
    target: TargetSpec, plan: ArmPlan, options: RunOptions, progress: Callable[[str], None], root: str
) -> Measurement | str:
    """The target's original arm, keyed; a string says why it could not run.

    No ``fullgraph=True`` check: the gate compares logged sites, and that
    check would trace a large model once more for nothing.
    """
    with TargetSession(target, options, progress) as session:
        try:
            arm = session.run_original(plan, fullgraph=False)
        except (ArmError, ArmCrashed) as error:
            return str(error)
    return measure(arm, root)


def gate_run(
    baseline: Path,
    writing: bool,
    measured: Mapping[str, Measurement | str],
    stored: Mapping[str, Breaks] | None,
) -> GateRun:
    """Split measurements from errors and, when checking, compare each with its stored breaks."""
    ok = {name: m for name, m in measured.items() if isinstance(m, Measurement)}
    errors = {name: m for name, m in measured.items() if isinstance(m, str)}
    comparisons = () if stored is None else tuple(compare(name, m, stored.get(name)) for name, m in ok.items())
    return GateRun(str(baseline), writing, ok, errors, comparisons)
