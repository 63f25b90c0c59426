"""The results of verifying targets, as typed objects and as the ``--json`` schema.

An arm's JSON (written by :mod:`.arm`) is read into :class:`ArmResult`; a
target's two arms plus equivalence, reconciliation and timings make a
:class:`TargetResult`, whose :meth:`TargetResult.to_json` is the documented
``--json`` object.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from graphmend_lint.verify.reconcile import Reconciliation

#: ``unfixed``: nothing was measured wrong, but no fix was applied because every
#: fix needs ``--unsafe-fixes``; reporting PASS there would read as "verified".
PASS, FAIL, ERROR, UNFIXED = "pass", "fail", "error", "unfixed"


@dataclass(frozen=True)
class BreakInfo:
    reason: str
    gb_id: str | None
    filename: str
    line: int
    splits: bool


@dataclass
class ArmResult:
    """What one arm measured.

    ``logged_sites`` (distinct sites Dynamo logged) is the headline: a break
    is removed only when Dynamo no longer logs it. ``graph_break_count``
    counts the subset that split a graph, ``fullgraph`` says whether
    ``torch.compile(fullgraph=True)`` ran every input set.
    """

    graph_count: int
    graph_break_count: int
    logged_sites: int
    explain_break_count: int
    breaks: list[BreakInfo]
    skipped_frames: list[str]
    modules: list[dict[str, Any]] = field(default_factory=list)
    executed: dict[str, list[int]] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    tolerances: dict[str, float] = field(default_factory=dict)
    equivalence: dict[str, Any] | None = None
    gradient_equivalence: dict[str, Any] | None = None  # train mode: parameters' .grad after backward
    bench: dict[str, Any] | None = None
    seconds: float = 0.0
    entry: str | None = None  # the compiled callable's dotted name, seeded into the linter
    fullgraph: dict[str, Any] | None = None  # {"passes": bool, "error": str}
    # {"filename", "function", "line", "reason"} per recompilation; None when not counted
    recompiles: list[dict[str, Any]] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArmResult:
        breaks = data["breaks"]
        return cls(
            graph_count=breaks["graph_count"],
            graph_break_count=breaks["graph_break_count"],
            logged_sites=breaks["logged_sites"],
            explain_break_count=breaks["explain_break_count"],
            breaks=[BreakInfo(**b) for b in breaks["breaks"]],
            skipped_frames=list(breaks["skipped_frames"]),
            modules=list(data.get("modules", [])),
            executed=dict(data.get("executed", {})),
            environment=dict(data.get("environment", {})),
            tolerances=dict(data.get("tolerances", {})),
            equivalence=data.get("equivalence"),
            gradient_equivalence=data.get("gradient_equivalence"),
            bench=data.get("bench"),
            seconds=float(data.get("seconds", 0.0)),
            entry=data.get("entry"),
            fullgraph=data.get("fullgraph"),
            recompiles=data.get("recompiles"),
        )

    @property
    def fixes(self) -> dict[str, list[str]]:
        """Fix codes applied per file (empty for the original arm)."""
        return {m["filename"]: m["fixes"] for m in self.modules if m.get("fixes")}

    @property
    def held_back(self) -> dict[str, list[str]]:
        """Codes per file whose fix was not applied because it needs ``--unsafe-fixes``."""
        return {m["filename"]: m["held_back"] for m in self.modules if m.get("held_back")}

    @property
    def fixed_texts(self) -> dict[str, str]:
        """The compiled text of every scope file a fix changed."""
        return {m["filename"]: m["text"] for m in self.modules if "text" in m}

    @property
    def fullgraph_passes(self) -> bool | None:
        return None if self.fullgraph is None else bool(self.fullgraph["passes"])

    def to_json(self) -> dict[str, Any]:
        return {
            "graph_count": self.graph_count,
            "graph_break_count": self.graph_break_count,
            "logged_sites": self.logged_sites,
            "explain_break_count": self.explain_break_count,
            "fullgraph": self.fullgraph,
            "breaks": [vars(b) for b in self.breaks],
            "skipped_frames": self.skipped_frames,
            "modules": [{"name": m["name"], "filename": m["filename"], "changed": m["changed"]} for m in self.modules],
            "fixes": self.fixes,
            "fixes_held_back": self.held_back,
            "entry": self.entry,
            "seconds": self.seconds,
            **({} if self.recompiles is None else {"recompiles": self.recompiles}),
        }


def count(per_file: dict[str, list[str]]) -> int:
    return sum(len(codes) for codes in per_file.values())


@dataclass(frozen=True)
class ColdStarts:
    """Cold-start seconds of both arms, each from several fresh processes."""

    original: tuple[float, ...]
    fixed: tuple[float, ...]

    @property
    def within_noise(self) -> bool:
        """The arms' ranges (min to max) overlap: the difference is not larger than the spread."""
        return min(self.original) <= max(self.fixed) and min(self.fixed) <= max(self.original)

    @staticmethod
    def summary(samples: tuple[float, ...]) -> dict[str, Any]:
        return {"cold_s": statistics.median(samples), "cold_min_s": min(samples), "cold_max_s": max(samples),
                "cold_runs": list(samples)}


@dataclass
class TargetResult:
    """One target, both arms, and the verdict."""

    target: str
    original: ArmResult | None = None
    fixed: ArmResult | None = None
    error: str | None = None  # verification could not run (exit 2)
    fixed_error: str | None = None  # the fixed arm failed where the original ran (a failed fix)
    reconciliation: Reconciliation | None = None
    reconciliation_error: str | None = None
    cold: ColdStarts | None = None

    @property
    def outputs_equal(self) -> bool | None:
        if self.fixed_error:
            return False
        if self.fixed is None or self.fixed.equivalence is None:
            return None
        return bool(self.fixed.equivalence["outputs_equal"])

    @property
    def gradients_equal(self) -> bool | None:
        """Train mode only (``None`` otherwise): the parameters' gradients after backward are equal."""
        if self.fixed is None or self.fixed.gradient_equivalence is None:
            return False if self.fixed_error else None
        return bool(self.fixed.gradient_equivalence["outputs_equal"])

    @property
    def max_abs_diff(self) -> float | None:
        return None if self.fixed is None or self.fixed.equivalence is None else self.fixed.equivalence["max_abs_diff"]

    @property
    def fixes_applied(self) -> int:
        return count(self.fixed.fixes) if self.fixed else 0

    @property
    def fixes_held_back(self) -> int:
        return count(self.fixed.held_back) if self.fixed else 0

    @property
    def failure(self) -> str:
        """Why the fixes failed, in one line ("" when they did not)."""
        if self.fixed_error:
            return f"the fixed code fails: {self.fixed_error}"
        if self.original is None or self.fixed is None:
            return ""
        if not self.outputs_equal:
            return f"outputs differ: {self.fixed.equivalence['detail'] if self.fixed.equivalence else '?'}"
        if self.gradients_equal is False:
            return f"gradients differ: {self.fixed.gradient_equivalence['detail']}"  # type: ignore[index]
        before, after = self.original.logged_sites, self.fixed.logged_sites
        if after > before:
            return f"more logged graph breaks after the fix ({before} -> {after})"
        if self.original.fullgraph_passes and self.fixed.fullgraph_passes is False:
            error = self.fixed.fullgraph["error"] if self.fixed.fullgraph else "?"
            return f"torch.compile(fullgraph=True) passed before the fix and fails after: {error}"
        return ""

    @property
    def detail(self) -> str:
        """Why the target did not pass, in one line ("" when it passed)."""
        if self.error:
            return self.error
        if self.failure:
            return self.failure
        if not self.fixes_applied and self.fixes_held_back:
            return f"{self.fixes_held_back} {_fixes(self.fixes_held_back)} not applied: need `--unsafe-fixes`"
        return ""

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        if self.failure:
            return FAIL
        return UNFIXED if self.detail else PASS

    @property
    def environment(self) -> dict[str, Any]:
        arm = self.original or self.fixed
        return arm.environment if arm else {}

    def bench_json(self) -> dict[str, Any] | None:
        """Steady state from each arm, cold start from the fresh cold-start processes."""
        if not (self.original and self.original.bench and self.fixed and self.fixed.bench):
            return None
        arms = {}
        for role, arm in (("original", self.original), ("fixed", self.fixed)):
            compiled = arm.bench["compiled"]  # type: ignore[index]
            samples = getattr(self.cold, role) if self.cold else ()
            cold = ColdStarts.summary(samples) if samples else {"cold_s": compiled["cold_s"], "cold_runs": []}
            arms[role] = {**cold, "steady_ms": compiled["steady_ms"], "p90_ms": compiled["p90_ms"]}
        return {
            "device": self.original.bench["device"],
            **arms,
            "cold_within_noise": self.cold.within_noise if self.cold else None,
            "eager_ms": self.original.bench["eager"]["steady_ms"],
            "eager_p90_ms": self.original.bench["eager"]["p90_ms"],
        }

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "target": self.target,
            "status": self.status,
            "detail": self.detail,
            "original": self.original.to_json() if self.original else None,
            "fixed": self.fixed.to_json() if self.fixed else None,
            "outputs_equal": self.outputs_equal,
            "gradients_equal": self.gradients_equal,
            "fixes_applied": self.fixes_applied,
            "fixes_held_back": self.fixes_held_back,
            "max_abs_diff": self.max_abs_diff,
            "tolerances": self.fixed.tolerances if self.fixed else None,
            "reconciliation": self.reconciliation.to_json() if self.reconciliation else None,
            "environment": self.environment,
        }
        if self.reconciliation_error:
            data["reconciliation_error"] = self.reconciliation_error
        bench = self.bench_json()
        if bench is not None:
            data["bench"] = bench
        return data


def _fixes(number: int) -> str:
    return "fix" if number == 1 else "fixes"
