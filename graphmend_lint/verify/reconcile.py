"""Pair what Dynamo really did with what the linter predicted, line by line.

Two questions, asked of the ORIGINAL arm (the code as the user wrote it):

* each runtime break site: did a static finding cover that (file, line)?
  ``found``, ``missed``, or ``outside_scope`` when the file was not linted
  (a break in a module outside ``--scope-module`` says nothing about the
  linter);
* each static finding in a scope file: did Dynamo break there?
  ``confirmed``, ``not_a_break``, or ``not_run`` when none of its lines ran
  (an unexercised branch proves nothing either way).

Every logged site counts, splitting or not: a logged break is Dynamo saying
"I cannot trace this", which is exactly what a finding predicts. A site
matches a finding when the site's line lies within the finding's line span
(Dynamo attributes a multi-line condition to each operand's line).
Per-family counts use the finding's code, or for a missed site the family of
the rules that declare its GB id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

FAMILY_NAMES = {
    "GM0": "GM0xx syntax",
    "GM1": "GM1xx control flow",
    "GM2": "GM2xx side effects",
    "GM3": "GM3xx host sync",
    "GM4": "GM4xx shapes",
}
UNKNOWN_FAMILY = "unknown"
COUNTS = ("found", "missed", "confirmed", "not_a_break")


def family_of(code: str) -> str:
    """``GM201`` -> ``GM2xx side effects``."""
    return FAMILY_NAMES.get(code[:3], f"{code[:3]}xx")


@dataclass(frozen=True)
class Finding:
    """A static diagnostic, reduced to what reconciliation needs."""

    code: str
    filename: str
    line: int
    end_line: int
    message: str = ""


@dataclass(frozen=True)
class Site:
    """A runtime break site of the original arm."""

    filename: str
    line: int
    gb_id: str | None
    reason: str
    splits: bool


@dataclass(frozen=True)
class SiteCheck:
    site: Site
    status: str  # found / missed / outside_scope
    codes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FindingCheck:
    finding: Finding
    status: str  # confirmed / not_a_break / not_run


@dataclass
class Reconciliation:
    """Counts for the report, and the pairings behind them."""

    found: int = 0
    missed: int = 0
    outside_scope: int = 0
    confirmed: int = 0
    not_a_break: int = 0
    not_run: int = 0
    per_family: dict[str, dict[str, int]] = field(default_factory=dict)
    sites: list[SiteCheck] = field(default_factory=list)
    findings: list[FindingCheck] = field(default_factory=list)

    def _bump(self, family: str, status: str) -> None:
        counts = self.per_family.setdefault(family, dict.fromkeys(COUNTS, 0))
        counts[status] += 1

    def to_json(self) -> dict[str, object]:
        return {
            "found": self.found,
            "missed": self.missed,
            "outside_scope": self.outside_scope,
            "confirmed": self.confirmed,
            "not_a_break": self.not_a_break,
            "not_run": self.not_run,
            "per_family": self.per_family,
            "sites": [
                {"filename": c.site.filename, "line": c.site.line, "gb_id": c.site.gb_id, "status": c.status,
                 "codes": list(c.codes)}
                for c in self.sites
            ],
            "findings": [
                {"code": c.finding.code, "filename": c.finding.filename, "line": c.finding.line, "status": c.status}
                for c in self.findings
            ],
        }


def _real(path: str) -> str:
    return os.path.realpath(path)


def reconcile(
    sites: Iterable[Site],
    findings: Iterable[Finding],
    linted_files: Iterable[str],
    executed: Mapping[str, Iterable[int]],
    gb_families: Mapping[str, str],
) -> Reconciliation:
    """Pair ``sites`` with ``findings``; see the module docstring for the statuses."""
    linted = {_real(f) for f in linted_files}
    ran = {_real(f): set(lines) for f, lines in executed.items()}
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(_real(finding.filename), []).append(finding)
    sites = list(sites)
    result = Reconciliation()

    for site in sites:
        path = _real(site.filename)
        covering = [f for f in by_file.get(path, []) if f.line <= site.line <= f.end_line]
        if covering:
            status = "found"
            families = {family_of(f.code) for f in covering}
        elif path in linted:
            status = "missed"
            families = {gb_families.get(site.gb_id or "", UNKNOWN_FAMILY)}
        else:
            result.sites.append(SiteCheck(site, "outside_scope"))
            result.outside_scope += 1
            continue
        result.sites.append(SiteCheck(site, status, tuple(sorted({f.code for f in covering}))))
        setattr(result, status, getattr(result, status) + 1)
        for family in sorted(families):
            result._bump(family, status)

    broken_lines = {(_real(s.filename), s.line) for s in sites}
    for path, file_findings in sorted(by_file.items()):
        for finding in sorted(file_findings, key=lambda f: (f.line, f.code)):
            span = range(finding.line, finding.end_line + 1)
            if not any(line in ran.get(path, ()) for line in span):
                status = "not_run"
            elif any((path, line) in broken_lines for line in span):
                status = "confirmed"
            else:
                status = "not_a_break"
            result.findings.append(FindingCheck(finding, status))
            setattr(result, status, getattr(result, status) + 1)
            if status != "not_run":
                result._bump(family_of(finding.code), status)
    return result
