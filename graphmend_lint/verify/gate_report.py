"""What the break gate prints: a text summary, JSON, GitHub annotations or SARIF.

Annotations and SARIF locate new FIRST-PARTY breaks on lines of the
repository (a pull request can fix those); they reuse the lint output's
GitHub and SARIF renderers by turning each new site into a
:class:`~graphmend_lint.diagnostics.Diagnostic` whose code is the GB id.
New third-party sites cannot be placed on a line of the repository: GitHub
gets a file-less ``::error`` for each, SARIF leaves them out, and the text
and JSON reports list them with their package.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from graphmend_lint import __version__
from graphmend_lint.diagnostics import Diagnostic, Position
from graphmend_lint.docs import gb_url
from graphmend_lint.output import github, sarif
from graphmend_lint.output.report import Report
from graphmend_lint.verify.attribution import FIRST_PARTY
from graphmend_lint.verify.baseline import Comparison, MeasuredRecompile, MeasuredSite, Measurement, SiteKey
from graphmend_lint.verify.gate import GateRun

RECOMPILE_CODE = "recompile"
RECOMPILE_NAME = "Dynamo compiled a function again: a guard of an earlier compilation failed"


def render(run: GateRun, output_format: str) -> str:
    """The report on stdout in ``output_format`` (``text`` is also what other formats print on stderr)."""
    if output_format == "json":
        return json.dumps(to_json(run), indent=2, ensure_ascii=False) + "\n"
    if output_format == "github":
        return _github(run)
    if output_format == "sarif":
        return sarif.render(_report(run))
    return text(run)


def _status(run: GateRun, comparison: Comparison | None) -> str:
    if comparison is None:
        return "written" if run.writing else "measured"
    return "fail" if comparison.grew else "pass"


def _where(site: MeasuredSite) -> str:
    package = f" ({site.package})" if site.package else ""
    return f"{site.key.party}{package} {site.key.path}:{site.line}"


def _site_text(site: MeasuredSite) -> str:
    return f"{_where(site)}  {site.key.gb_id or '-'}  {site.reason}  `{site.key.source}`"


def _site_line(site: MeasuredSite, marker: str) -> str:
    return f"  {marker} {_site_text(site)}"


def _gone_line(key: SiteKey) -> str:
    return f"  - {key.party} {key.path}  {key.gb_id or '-'}  `{key.source}`  (gone)"


def _recompile_text(recompile: MeasuredRecompile) -> str:
    key = recompile.key
    return f"recompile of {key.function} ({key.party} {key.path}:{recompile.line}): {recompile.reason}"


def _recompile_line(recompile: MeasuredRecompile, marker: str) -> str:
    return f"  {marker} {_recompile_text(recompile)}"


def text(run: GateRun) -> str:
    """A human summary: per target its verdict, every site attributed, new ones marked ``+``."""
    lines = []
    comparisons = {c.target: c for c in run.comparisons}
    for name, measurement in run.measured.items():
        comparison = comparisons.get(name)
        lines.append(_headline(name, measurement, comparison, run))
        new = set(map(id, comparison.new_sites)) if comparison else set()
        new_recompiles = set(map(id, comparison.new_recompiles)) if comparison else set()
        lines += [_site_line(s, "+" if id(s) in new else " ") for s in measurement.sites]
        lines += [_recompile_line(r, "+" if id(r) in new_recompiles else " ") for r in measurement.recompiles]
        if comparison:
            lines += [_gone_line(key) for key in comparison.gone_sites]
            if comparison.shrank and not comparison.grew:
                lines.append(f"  shrank below the baseline: run with --write-baseline {run.baseline} to tighten it")
    lines += [f"{name}: ERROR: {error}" for name, error in run.errors.items()]
    if run.writing:
        lines.append(f"wrote {run.baseline} ({len(run.measured)} target(s))" if not run.errors
                     else f"{run.baseline} not written: a target could not be measured")
    elif run.exit_code == 1:
        grew = sum(1 for c in run.comparisons if c.grew)
        lines.append(f"FAIL: logged break sites or recompiles grew beyond {run.baseline} in {grew} target(s)")
    elif run.exit_code == 0:
        lines.append(f"PASS: no logged break site or recompile beyond {run.baseline}")
    return "\n".join(lines) + "\n"


def _headline(name: str, measurement: Measurement, comparison: Comparison | None, run: GateRun) -> str:
    sites, recompiles = len(measurement.sites), len(measurement.recompiles)
    first = sum(1 for s in measurement.sites if s.key.party == FIRST_PARTY)
    counts = f"{sites} logged break site(s) ({first} first-party, {sites - first} third-party), {recompiles} recompile(s)"
    if comparison is None:
        return f"{name}: {counts}"
    verdict = "FAIL" if comparison.grew else "PASS"
    change = (f"sites {comparison.sites_before} -> {sites}, "
              f"recompiles {comparison.recompiles_before} -> {comparison.recompiles_after}")
    why = []
    if comparison.stored is None:
        why.append("not in the baseline, every site counts as new")
    if comparison.new_sites:
        why.append(f"{len(comparison.new_sites)} new site(s)")
    if comparison.new_recompiles:
        why.append(f"{len(comparison.new_recompiles)} new recompile(s)")
    if comparison.shrank and not comparison.grew:
        why.append("shrank")
    return f"{name}: {verdict}: {change}" + (f" ({'; '.join(why)})" if why else "")


def _site_json(site: MeasuredSite, new: bool) -> dict[str, Any]:
    return {**vars(site.key), "package": site.package, "filename": site.filename, "line": site.line,
            "reason": site.reason, "new": new}


def _recompile_json(recompile: MeasuredRecompile, new: bool) -> dict[str, Any]:
    return {**vars(recompile.key), "filename": recompile.filename, "line": recompile.line,
            "reason": recompile.reason, "new": new}


def to_json(run: GateRun) -> dict[str, Any]:
    """The ``--output-format json`` object: one entry per target, every site with its attribution."""
    comparisons = {c.target: c for c in run.comparisons}
    targets = []
    for name, measurement in run.measured.items():
        comparison = comparisons.get(name)
        new = set(map(id, comparison.new_sites)) if comparison else set()
        new_recompiles = set(map(id, comparison.new_recompiles)) if comparison else set()
        entry: dict[str, Any] = {
            "target": name,
            "status": _status(run, comparison),
            "sites": [_site_json(s, id(s) in new) for s in measurement.sites],
            "recompiles": [_recompile_json(r, id(r) in new_recompiles) for r in measurement.recompiles],
        }
        if comparison:
            entry.update({
                "in_baseline": comparison.stored is not None,
                "logged_sites": {"baseline": comparison.sites_before, "now": len(measurement.sites)},
                "recompile_count": {"baseline": comparison.recompiles_before, "now": comparison.recompiles_after},
                "new_sites": len(comparison.new_sites),
                "new_recompiles": len(comparison.new_recompiles),
                "gone_sites": [vars(key) for key in comparison.gone_sites],
                "shrank": comparison.shrank,
            })
        targets.append(entry)
    targets += [{"target": name, "status": "error", "error": error} for name, error in run.errors.items()]
    status = {0: "pass", 1: "fail", 2: "error"}[run.exit_code]
    return {"baseline": run.baseline, "mode": "write" if run.writing else "check", "status": status,
            "targets": targets}


def _new(run: GateRun) -> Iterable[tuple[Comparison, MeasuredSite | MeasuredRecompile]]:
    for comparison in run.comparisons:
        yield from ((comparison, s) for s in comparison.new_sites)
        yield from ((comparison, r) for r in comparison.new_recompiles)


def _diagnostic(comparison: Comparison, found: MeasuredSite | MeasuredRecompile) -> Diagnostic:
    """A new first-party site or recompile as a diagnostic of the lint renderers, on its line."""
    if isinstance(found, MeasuredSite):
        code = found.key.gb_id or "graph-break"
        message = f"new graph break in {comparison.target} (not in the baseline): {found.reason}"
        start, end = found.column, found.column + len(found.key.source)
    else:
        code = RECOMPILE_CODE
        message = f"new recompilation of {found.key.function} in {comparison.target}: {found.reason}"
        start = end = 0
    return Diagnostic(code, message, found.key.path, Position(found.line, start), Position(found.line, end))


def _report(run: GateRun) -> Report:
    diagnostics = [_diagnostic(c, f) for c, f in _new(run) if f.key.party == FIRST_PARTY]
    gb_ids = {d.code for d in diagnostics if d.code.startswith("GB")}
    names = {f.key.gb_id: f.reason for _, f in _new(run) if isinstance(f, MeasuredSite)}
    return Report(
        tuple(diagnostics),
        rule_urls={gb: gb_url(gb) for gb in gb_ids},
        rule_names={**{gb: names[gb] for gb in gb_ids}, RECOMPILE_CODE: RECOMPILE_NAME},
        tool_version=__version__,
    )


def _github(run: GateRun) -> str:
    """Annotations on the lines of new first-party breaks; a file-less error for each third-party one."""
    out = github.render(_report(run))
    for comparison, found in _new(run):
        if found.key.party != FIRST_PARTY:
            what = _site_text(found) if isinstance(found, MeasuredSite) else _recompile_text(found)
            out += f"::error title=new third-party break::{github.escape_data(f'{comparison.target}: {what}')}\n"
    return out
