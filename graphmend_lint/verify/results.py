"""The results of verifying targets, as typed objects and as the ``--json`` schema.

An arm's JSON (written by :mod:`.arm`) is read into :class:`ArmResult`; a
target's two arms plus equivalence, reconciliation and timings make a
:class:`TargetResult`, whose :meth:`TargetResult.to_json` is the documented
``--json`` object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphmend_lint.verify.reconcile import Reconciliation

PASS, FAIL, ERROR = "pass", "fail", "error"


@dataclass(frozen=True)
class BreakInfo:
    reason: str
    gb_id: str | None
    filename: str
    line: int
    splits: bool


@dataclass
class ArmResult:
    """What one arm measured. ``graph_break_count`` counts splitting sites."""

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
    bench: dict[str, Any] | None = None
    seconds: float = 0.0
    entry: str | None = None  # the compiled callable's dotted name, seeded into the linter

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
            bench=data.get("bench"),
            seconds=float(data.get("seconds", 0.0)),
            entry=data.get("entry"),
        )

    @property
    def fixes(self) -> dict[str, list[str]]:
        """Fix codes applied per file (empty for the original arm)."""
        return {m["filename"]: m["fixes"] for m in self.modules if m.get("fixes")}

    def to_json(self) -> dict[str, Any]:
        return {
            "graph_count": self.graph_count,
            "graph_break_count": self.graph_break_count,
            "logged_sites": self.logged_sites,
            "explain_break_count": self.explain_break_count,
            "breaks": [
                {"reason": b.reason, "gb_id": b.gb_id, "filename": b.filename, "line": b.line, "splits": b.splits}
                for b in self.breaks
            ],
            "skipped_frames": self.skipped_frames,
            "modules": [{"name": m["name"], "filename": m["filename"], "changed": m["changed"]} for m in self.modules],
            "fixes": self.fixes,
            "entry": self.entry,
            "seconds": self.seconds,
        }


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

    @property
    def outputs_equal(self) -> bool | None:
        if self.fixed_error:
            return False
        if self.fixed is None or self.fixed.equivalence is None:
            return None
        return bool(self.fixed.equivalence["outputs_equal"])

    @property
    def max_abs_diff(self) -> float | None:
        return None if self.fixed is None or self.fixed.equivalence is None else self.fixed.equivalence["max_abs_diff"]

    @property
    def detail(self) -> str:
        """Why the target failed, in one line ("" when it passed)."""
        if self.error:
            return self.error
        if self.fixed_error:
            return f"the fixed code fails: {self.fixed_error}"
        assert self.original is not None and self.fixed is not None
        if not self.outputs_equal:
            return f"outputs differ: {self.fixed.equivalence['detail'] if self.fixed.equivalence else '?'}"
        if self.fixed.graph_break_count > self.original.graph_break_count:
            before, after = self.original.graph_break_count, self.fixed.graph_break_count
            return f"more graph breaks after the fix ({before} -> {after})"
        return ""

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        return FAIL if self.detail else PASS

    @property
    def environment(self) -> dict[str, Any]:
        arm = self.original or self.fixed
        return arm.environment if arm else {}

    def bench_json(self) -> dict[str, Any] | None:
        if not (self.original and self.original.bench and self.fixed and self.fixed.bench):
            return None
        return {
            "device": self.original.bench["device"],
            "original": self.original.bench["compiled"],
            "fixed": self.fixed.bench["compiled"],
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
