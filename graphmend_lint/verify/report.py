"""Render verification results: terminal table, ``--json`` and ``--markdown``.

One set of row builders feeds both the terminal and the Markdown table, so
the two cannot disagree. Every report names the machine, device and
versions, because break counts and timings are meaningless without them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphmend_lint.verify.results import ArmResult, TargetResult

HEADERS = ("target", "breaks", "fullgraph", "outputs", "max|diff|", "fixes", "splitting", "graphs", "skipped",
           "found/missed", "confirmed/not")
BENCH_HEADERS = ("device", "cold s", "steady ms", "p90 ms", "eager ms")
#: What each column means; printed under every table, so a reader needs no manual.
LEGEND = (
    "breaks: distinct graph-break sites Dynamo logged, before -> after the fixes (a break is removed only when it "
    "is no longer logged)",
    "fullgraph: whether torch.compile(fullgraph=True) runs every input set",
    "outputs, max|diff|: the fixed code's outputs against the original's, and their largest difference "
    "(with --train also the parameters' gradients after backward)",
    "fixes: fixes applied in memory (and how many need --unsafe-fixes)",
    "splitting: logged sites that split a graph; graphs: graphs compiled; skipped: frames Dynamo ran fully eager",
    "found/missed: logged sites a finding predicted (on its line, or removed by its fix) / did not; "
    "confirmed/not: findings that broke (or whose fix removed a break) / that ran without breaking",
)
BENCH_LEGEND = (
    "cold s: first compiled call, compilation included, median of fresh processes [min-max]; "
    "steady ms, p90 ms: median and 90th percentile of compiled calls; eager ms: uncompiled",
)


def _arrow(before: Any, after: Any) -> str:
    return f"{before} -> {after}"


def _outputs(result: TargetResult) -> str:
    if result.outputs_equal is None:
        return "-"
    outputs = "equal" if result.outputs_equal else "DIFFER"
    if result.gradients_equal is None:
        return outputs
    return f"{outputs}, grads {'equal' if result.gradients_equal else 'DIFFER'}"


def _diff(result: TargetResult) -> str:
    return "-" if result.max_abs_diff is None else f"{result.max_abs_diff:.2g}"


def _reconciliation(result: TargetResult) -> tuple[str, str]:
    rec = result.reconciliation
    if rec is None:
        return "-", "-"
    return f"{rec.found}/{rec.missed}", f"{rec.confirmed}/{rec.not_a_break}"


def _fullgraph(arm: ArmResult | None) -> str:
    if arm is None:
        return "!"
    return {True: "passes", False: "fails", None: "-"}[arm.fullgraph_passes]


def _fixes(result: TargetResult) -> str:
    held_back = f" ({result.fixes_held_back} need --unsafe-fixes)" if result.fixes_held_back else ""
    return f"{result.fixes_applied}{held_back}" if result.fixed else "-"


def _row(result: TargetResult) -> list[str]:
    original, after = result.original, result.fixed
    if original is None:
        return [result.target, *["-"] * (len(HEADERS) - 1)]
    found, confirmed = _reconciliation(result)
    return [
        result.target,
        _arrow(original.logged_sites, after.logged_sites if after else "!"),
        _arrow(_fullgraph(original), _fullgraph(after)),
        _outputs(result),
        _diff(result),
        _fixes(result),
        _arrow(original.graph_break_count, after.graph_break_count if after else "!"),
        _arrow(original.graph_count, after.graph_count if after else "!"),
        _arrow(len(original.skipped_frames), len(after.skipped_frames) if after else "!"),
        found,
        confirmed,
    ]


def _bench_row(result: TargetResult) -> list[str]:
    bench = result.bench_json()
    if bench is None:
        return ["-"] * len(BENCH_HEADERS)
    before, after = bench["original"], bench["fixed"]
    return [
        bench["device"],
        _arrow(_cold(before), _cold(after)),
        _arrow(f"{before['steady_ms']:.2f}", f"{after['steady_ms']:.2f}"),
        _arrow(f"{before['p90_ms']:.2f}", f"{after['p90_ms']:.2f}"),
        f"{bench['eager_ms']:.2f}",
    ]


def _cold(arm: dict[str, Any]) -> str:
    """``14.8 [14.1-16.4]``: the median, and the range when there were several runs."""
    spread = f" [{arm['cold_min_s']:.1f}-{arm['cold_max_s']:.1f}]" if len(arm.get("cold_runs", ())) > 1 else ""
    return f"{arm['cold_s']:.1f}{spread}"


def _rows(results: Sequence[TargetResult], bench: bool) -> tuple[list[str], list[list[str]]]:
    headers = [*HEADERS, *(BENCH_HEADERS if bench else ()), "status"]
    rows = [[*_row(r), *(_bench_row(r) if bench else ()), r.status.upper()] for r in results]
    return headers, rows


def _environment_line(results: Sequence[TargetResult]) -> str:
    env = next((r.environment for r in results if r.environment), None)
    if not env:
        return "environment: unknown (no arm ran)"
    return (
        f"machine: {env['machine']} | device: {env['device']} ({env['device_name']}, "
        f"{env.get('torch_threads', '?')} torch threads) | "
        f"torch {env['torch']} | transformers {env['transformers'] or '-'} | python {env['python']}"
    )


def _short(filename: str) -> str:
    """A path short enough for a table: relative to cwd or site-packages when it can be."""
    marker = f"site-packages{os.sep}"
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith(os.pardir) else relative


def _details(result: TargetResult) -> list[str]:
    """Per-target notes: why it failed, skipped frames (loudly), break sites, fixes, noise."""
    lines = []
    if result.detail:
        lines.append(f"{result.target}: {result.status.upper()}: {result.detail}")
    if result.fixes_held_back and result.fixes_applied:
        lines.append(f"{result.target}: {result.fixes_held_back} more fixes not applied: need `--unsafe-fixes`")
    if result.fixed and result.fixed.fullgraph and not result.fixed.fullgraph["passes"]:
        lines.append(f"{result.target} [fixed]: fullgraph=True fails: {result.fixed.fullgraph['error']}")
    for role, arm in (("original", result.original), ("fixed", result.fixed)):
        if arm is None:
            continue
        if arm.skipped_frames:
            lines.append(
                f"{result.target} [{role}]: WARNING: Dynamo skipped {len(arm.skipped_frames)} frame(s) entirely "
                "(they run fully eager, worse than a graph break):"
            )
            lines += [f"    {_short(frame)}" for frame in arm.skipped_frames]
        for b in arm.breaks:
            tag = "splits" if b.splits else "no split"
            lines.append(f"{result.target} [{role}]: {_short(b.filename)}:{b.line} {b.gb_id or '-'} ({tag}) {b.reason}")
        for filename, codes in arm.fixes.items():
            lines.append(f"{result.target} [{role}]: fixed {_short(filename)}: {', '.join(codes)}")
        for filename, codes in arm.held_back.items():
            lines.append(f"{result.target} [{role}]: not fixed without --unsafe-fixes in {_short(filename)}: "
                         f"{', '.join(codes)}")
    if result.reconciliation_error:
        lines.append(f"{result.target}: reconciliation unavailable: {result.reconciliation_error}")
    elif result.reconciliation is not None:
        for check in result.reconciliation.sites:
            where = f"{_short(check.site.filename)}:{check.site.line} {check.site.gb_id or '-'}"
            if check.status == "missed":
                lines.append(f"{result.target}: missed by the linter: {where} {check.site.reason}")
            elif check.via == "fix":
                lines.append(f"{result.target}: {where} is found by its cause elsewhere: the fix of "
                             f"{', '.join(check.codes)} alone removes it")
    bench = result.bench_json()
    if bench is not None and bench["cold_within_noise"] is not None:
        runs = len(bench["original"]["cold_runs"])
        verdict = ("within noise: the ranges overlap, so the difference means nothing"
                   if bench["cold_within_noise"] else "outside noise: the ranges do not overlap")
        lines.append(f"{result.target}: cold start over {runs} fresh processes per arm is {verdict}")
    return lines


def terminal(results: Sequence[TargetResult], bench: bool) -> str:
    """An aligned table, the per-target notes, and the environment line."""
    headers, rows = _rows(results, bench)
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    table = [
        "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [headers, *rows]
    ]
    table.insert(1, "  ".join("-" * w for w in widths))
    legend = _legend(bench)
    notes = [line for result in results for line in _details(result)]
    blocks = [*table, "", *legend, "", *notes, *([""] if notes else []), _environment_line(results)]
    return "\n".join(blocks) + "\n"


def _legend(bench: bool) -> list[str]:
    return [f"  {line}" for line in (*LEGEND, *(BENCH_LEGEND if bench else ()))]


def markdown(results: Sequence[TargetResult], bench: bool) -> str:
    """The same table for a pull request, with break sites in collapsed sections."""
    headers, rows = _rows(results, bench)
    escape = lambda cell: str(cell).replace("|", "\\|")  # noqa: E731
    out = [
        "## graphmend-lint verify",
        "",
        "| " + " | ".join(escape(h) for h in headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
        *("| " + " | ".join(escape(c) for c in row) + " |" for row in rows),
        "",
        *(f"- {line}" for line in (*LEGEND, *(BENCH_LEGEND if bench else ()))),
        "",
    ]
    for result in results:
        details = _details(result)
        if details:
            out += [f"<details><summary>{result.target}</summary>", "", "```", *details, "```", "", "</details>", ""]
    out.append(f"_{_environment_line(results)}_")
    return "\n".join(out) + "\n"


def write_json(results: Sequence[TargetResult], path: Path) -> None:
    """``--json``: a list with one object per target."""
    path.write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n", encoding="utf-8")
