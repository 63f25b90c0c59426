"""Pair what Dynamo really did with what the linter predicted: by line, then by what each fix removes.

Two questions, asked of the ORIGINAL arm (the code as the user wrote it):

* each runtime break site: did a static finding predict it? ``found``,
  ``missed``, or ``outside_scope`` when the file was not linted (a break in
  a module outside the scope says nothing about the linter);
* each static finding in a scope file: did Dynamo break because of it?
  ``confirmed``, ``not_a_break``, or ``not_run`` when none of its lines ran
  (an unexercised branch proves nothing either way).

A finding predicts a site in one of two ways:

* **by line**: the site's line lies within the finding's line span (Dynamo
  attributes a multi-line condition to each operand's line);
* **by fix**: the site disappears when the finding's fix is applied alone
  (``removed_by``). A cause and its break can sit on different lines:
  reformer's ``np.lcm`` in a helper returns a numpy integer, and Dynamo
  breaks on the ``if`` that tests it forty lines away. Pairing by line alone
  called that a "not a break" finding and a "missed" site.

Every logged site counts, splitting or not: a logged break is Dynamo saying
"I cannot trace this", which is exactly what a finding predicts. Per-family
counts use the finding's code, or for a missed site the family of the rules
that declare its GB id.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

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
    fixable: bool = False  # this run applies its fix

    @property
    def key(self) -> FindingKey:
        return self.code, _real(self.filename), self.line


@dataclass(frozen=True)
class Site:
    """A runtime break site of the original arm."""

    filename: str
    line: int
    gb_id: str | None
    reason: str
    splits: bool

    @property
    def key(self) -> SiteKey:
        return _real(self.filename), self.line


#: ``(real path, line)`` of a break site; ``(code, real path, line)`` of a finding.
SiteKey = tuple[str, int]
FindingKey = tuple[str, str, int]


@dataclass(frozen=True)
class SiteCheck:
    site: Site
    status: str  # found / missed / outside_scope
    codes: tuple[str, ...] = ()
    via: str = ""  # found by "line" or by "fix"


@dataclass(frozen=True)
class FindingCheck:
    finding: Finding
    status: str  # confirmed / not_a_break / not_run
    removes: tuple[int, ...] = ()  # lines of breaks its fix removed elsewhere


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
        counts = {name: getattr(self, name) for name in (*COUNTS, "outside_scope", "not_run")}
        return {
            **counts,
            "per_family": self.per_family,
            "sites": [
                {**asdict(c.site), "status": c.status, "codes": list(c.codes), "via": c.via} for c in self.sites
            ],
            "findings": [
                {"code": c.finding.code, "filename": c.finding.filename, "line": c.finding.line, "status": c.status,
                 "removes": list(c.removes)}
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
    removed_by: Mapping[FindingKey, Iterable[SiteKey]] | None = None,
) -> Reconciliation:
    """Pair ``sites`` with ``findings``; see the module docstring for the statuses.

    ``removed_by`` maps a finding's :attr:`Finding.key` to the sites that
    disappeared when its fix alone was applied.
    """
    linted = {_real(f) for f in linted_files}
    ran = {_real(f): set(lines) for f, lines in executed.items()}
    removed = {finding: set(keys) for finding, keys in (removed_by or {}).items()}
    findings = list(findings)
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(_real(finding.filename), []).append(finding)
    sites = list(sites)
    result = Reconciliation()

    for site in sites:
        path = _real(site.filename)
        covering = [f for f in by_file.get(path, []) if f.line <= site.line <= f.end_line]
        fixing = [f for f in findings if site.key in removed.get(f.key, ())]
        if covering or fixing:
            status, via = "found", "line" if covering else "fix"
            families = {family_of(f.code) for f in covering or fixing}
        elif path in linted:
            status, via = "missed", ""
            families = {gb_families.get(site.gb_id or "", UNKNOWN_FAMILY)}
        else:
            result.sites.append(SiteCheck(site, "outside_scope"))
            result.outside_scope += 1
            continue
        result.sites.append(SiteCheck(site, status, tuple(sorted({f.code for f in covering or fixing})), via))
        setattr(result, status, getattr(result, status) + 1)
        for family in sorted(families):
            result._bump(family, status)

    broken_lines = {site.key for site in sites}
    for path, file_findings in sorted(by_file.items()):
        for finding in sorted(file_findings, key=lambda f: (f.line, f.code)):
            span = range(finding.line, finding.end_line + 1)
            removes = tuple(sorted(line for _, line in removed.get(finding.key, ()) if line not in span))
            if not any(line in ran.get(path, ()) for line in span):
                status = "not_run"
            elif any((path, line) in broken_lines for line in span) or removes:
                status = "confirmed"
            else:
                status = "not_a_break"
            result.findings.append(FindingCheck(finding, status, removes))
            setattr(result, status, getattr(result, status) + 1)
            if status != "not_run":
                result._bump(family_of(finding.code), status)
    return result


def line_map(original: str, fixed: str) -> dict[int, int]:
    """Fixed line -> original line, for the lines a fix left as they were (1-based)."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), fixed.splitlines(), autojunk=False)
    mapping: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapping[block.b + offset + 1] = block.a + offset + 1
    return mapping


def removed_sites(
    before: Iterable[Site], after: Iterable[Site], texts: Mapping[str, tuple[str, str]]
) -> set[SiteKey]:
    """Original sites with no break left on their line once the fixes are applied.

    ``after`` holds the fixed arm's sites, at fixed-text lines; ``texts``
    maps each changed file to its ``(original, fixed)`` text, so that those
    lines are mapped back. A break in code a fix wrote maps to no original
    line: it is new, not one of the old sites.
    """
    maps = {_real(path): line_map(*pair) for path, pair in texts.items()}
    still = set()
    for site in after:
        path = _real(site.filename)
        line = maps[path].get(site.line) if path in maps else site.line
        if line is not None:
            still.add((path, line))
    return {site.key for site in before} - still
