"""The census's tables, from ``hf_census.py``'s caches: coverage, per model and mode, per break category.

Pure reading and arithmetic (tested on synthetic caches): nothing here runs
torch. Numbers of record come from the verify stage (fresh processes); the
scan's counts stand in only for models not verified yet, and are marked so.

Counting. A *site* is a distinct ``(file, line, GB id)`` Dynamo logged
(``graph_breaks``), the number verify reports. Sites before a fix are the
original arm's; after it, the fixed arm's, whether they are original sites
still logged or new ones a fix introduced (both count against the fix). A
model and mode whose fixes change no text has the original's sites after.
Eval and train are counted separately and then added ("together").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from break_categories import CATEGORIES, categorise_site, ordered
from verify_runs import markdown_table

MODES = ("eval", "train")
LEVELS = ("safe", "unsafe")
NEW = "new (introduced by a fix)"


@dataclass
class LevelOutcome:
    """One fix level of one model and mode."""

    after: int  # logged sites after the fixes
    remaining: list[tuple[str, int, str | None]]  # original sites still logged
    new: int  # logged sites the fixed code added
    fullgraph_after: bool | None
    outputs_equal: bool | None  # None: same code, nothing to compare
    gradients_equal: bool | None
    fixes: list[str]
    status: str  # pass / fail / unfixed / same code / fixed code fails
    detail: str = ""


@dataclass
class ModelMode:
    """One model type in one mode: what the census knows about it."""

    model_type: str
    mode: str
    state: str  # "clean", "breaking", or a skip reason
    verified: bool = False
    sites: list[dict[str, Any]] = field(default_factory=list)  # original logged sites (verify's breaks dicts)
    fullgraph_before: bool | None = None
    graphs: int | None = None
    skipped_frames: int = 0
    levels: dict[str, LevelOutcome] = field(default_factory=dict)
    categories: dict[tuple[str, int, str | None], str] = field(default_factory=dict)

    @property
    def before(self) -> int:
        return len(self.sites)


def site_key(site: dict[str, Any] | list[Any]) -> tuple[str, int, str | None]:
    if isinstance(site, dict):
        return (os.path.realpath(site["filename"]), int(site["line"]), site.get("gb_id"))
    return (os.path.realpath(site[0]), int(site[1]), site[2])


def level_outcome(original: dict[str, Any], level: dict[str, Any] | None) -> LevelOutcome:
    """A level's outcome from its verify JSON (``None``: its fixes changed no text, the original code ran)."""
    before = original["breaks"]
    if level is None:
        return LevelOutcome(len(before), [site_key(b) for b in before], 0, (original.get("fullgraph") or {}).get(
            "passes"), None, None, [], "same code")
    fixed = level.get("fixed")
    fixes = sorted({code for codes in ((fixed or {}).get("fixes") or {}).values() for code in codes})
    if not fixed:  # the fixed code raised: it removed nothing
        return LevelOutcome(len(before), [site_key(b) for b in before], 0, None, False,
                            level.get("gradients_equal"), fixes, "fixed code fails", level.get("detail", ""))
    return LevelOutcome(
        after=fixed["logged_sites"],
        remaining=[site_key(s) for s in level.get("remaining_sites", [])],
        new=len(level.get("new_sites", [])),
        fullgraph_after=(fixed.get("fullgraph") or {}).get("passes"),
        outputs_equal=level.get("outputs_equal"),
        gradients_equal=level.get("gradients_equal"),
        fixes=fixes,
        status=level["status"],
        detail=level.get("detail", ""),
    )


def model_mode(model_type: str, mode: str, scan: dict[str, Any] | None, verify: dict[str, Any] | None,
               skip_of: Any) -> ModelMode:
    """Combine one type and mode's scan and verify results (the verify one wins where both exist)."""
    if verify and "original" in verify:
        original = verify["original"]
        entry = ModelMode(model_type, mode, "breaking" if original["logged_sites"] else "clean", verified=True,
                          sites=list(original["breaks"]), fullgraph_before=(original.get("fullgraph") or {}).get(
                              "passes"), graphs=original["graph_count"],
                          skipped_frames=len(original["skipped_frames"]))
        entry.levels = {level: level_outcome(original, data) for level, data in (verify.get("levels") or {}).items()}
        return entry
    if scan is None:
        return ModelMode(model_type, mode, "not measured")
    if "arm" not in scan:
        return ModelMode(model_type, mode, skip_of(scan))
    arm = scan["arm"]
    state = "breaking" if arm["logged_sites"] else "clean"
    return ModelMode(model_type, mode, state, sites=list(arm["breaks"]), graphs=arm["graph_count"],
                     fullgraph_before=(arm.get("fullgraph") or {}).get("passes"),
                     skipped_frames=len(arm["skipped_frames"]))


def categorise_all(entries: list[ModelMode]) -> None:
    """Each site's category; a train site is training-only when the same model's eval run did not log it."""
    eval_sites = {e.model_type: {site_key(s) for s in e.sites} for e in entries if e.mode == "eval"}
    for entry in entries:
        for site in entry.sites:
            key = site_key(site)
            train_only = entry.mode == "train" and entry.model_type in eval_sites and (
                key not in eval_sites[entry.model_type])
            entry.categories[key] = categorise_site(site, train_only)[0]


# -- aggregation ------------------------------------------------------------------------------------


@dataclass
class Totals:
    """Logged sites before and after each fix level over verified breaking model-modes."""

    models: int = 0
    before: int = 0
    after: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEVELS, 0))
    fixed_to_zero: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEVELS, 0))
    fullgraph_before: int = 0
    fullgraph_after: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEVELS, 0))
    output_changes: dict[str, list[str]] = field(default_factory=lambda: {level: [] for level in LEVELS})
    gradient_changes: dict[str, list[str]] = field(default_factory=lambda: {level: [] for level in LEVELS})
    failures: dict[str, list[str]] = field(default_factory=lambda: {level: [] for level in LEVELS})

    def removed_percent(self, level: str) -> float | None:
        return None if not self.before else 100.0 * (self.before - self.after[level]) / self.before

    def add(self, entry: ModelMode) -> None:
        self.models += 1
        self.before += entry.before
        self.fullgraph_before += bool(entry.fullgraph_before)
        name = f"{entry.model_type} ({entry.mode})"
        for level in LEVELS:
            outcome = entry.levels.get(level)
            if outcome is None:
                self.after[level] += entry.before
                continue
            self.after[level] += outcome.after
            self.fixed_to_zero[level] += outcome.after == 0
            self.fullgraph_after[level] += bool(outcome.fullgraph_after)
            if outcome.outputs_equal is False:
                self.output_changes[level].append(name)
            if outcome.gradients_equal is False:
                self.gradient_changes[level].append(name)
            if outcome.status in ("fail", "fixed code fails"):
                self.failures[level].append(f"{name}: {outcome.detail}")


def totals(entries: Iterable[ModelMode], modes: Iterable[str]) -> Totals:
    total = Totals()
    wanted = set(modes)
    for entry in entries:
        if entry.verified and entry.state == "breaking" and entry.mode in wanted:
            total.add(entry)
    return total


def category_rows(entries: Iterable[ModelMode], modes: Iterable[str]) -> dict[str, dict[str, int]]:
    """Per category: sites before and still logged after each level; new sites in their own row."""
    rows: dict[str, dict[str, int]] = defaultdict(lambda: {"before": 0, **dict.fromkeys(LEVELS, 0)})
    wanted = set(modes)
    for entry in entries:
        if not (entry.verified and entry.state == "breaking" and entry.mode in wanted):
            continue
        for key, category in entry.categories.items():
            rows[category]["before"] += 1
            for level in LEVELS:
                outcome = entry.levels.get(level)
                if outcome is None or (key[0], key[1]) in {(r[0], r[1]) for r in outcome.remaining}:
                    rows[category][level] += 1
        for level in LEVELS:
            outcome = entry.levels.get(level)
            if outcome is not None and outcome.new:
                rows[NEW][level] += outcome.new
    return dict(rows)


# -- rendering ------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def flag(value: bool | None, yes: str = "yes", no: str = "NO") -> str:
    return "-" if value is None else (yes if value else no)


def coverage_table(entries: list[ModelMode], enumerated: int, sub_configs: int) -> str:
    rows = [("model types in CONFIG_MAPPING", str(enumerated), ""),
            ("... sub-configs with no model class (measured through their parent)", str(sub_configs), "")]
    for mode in MODES:
        states = Counter(e.state for e in entries if e.mode == mode)
        verified = sum(e.verified and e.state == "breaking" for e in entries if e.mode == mode)
        measured = states["clean"] + states["breaking"]
        rows.append((f"{mode}: measured", str(measured), f"{states['breaking']} with logged breaks, "
                     f"{verified} of them verified before/after"))
        for state, count in sorted(states.items()):
            if state not in ("clean", "breaking"):
                rows.append((f"{mode}: {state}", str(count), ""))
    return markdown_table(("census", "types", "note"), rows)


def totals_table(entries: list[ModelMode]) -> str:
    rows = []
    for label, modes in (("eval", ("eval",)), ("train", ("train",)), ("together", MODES)):
        total = totals(entries, modes)
        for level in LEVELS:
            rows.append((label, level, str(total.models), f"{total.before} -> {total.after[level]}",
                         percent(total.removed_percent(level)), str(total.fixed_to_zero[level]),
                         f"{total.fullgraph_before} -> {total.fullgraph_after[level]}",
                         str(len(total.output_changes[level])), str(len(total.gradient_changes[level]))))
    return markdown_table(("mode", "fixes", "model-modes", "logged sites", "removed", "fixed to 0",
                           "fullgraph passes", "output changes", "gradient changes"), rows)


def category_table(entries: list[ModelMode], modes: Iterable[str]) -> str:
    rows = category_rows(entries, modes)
    lines = []
    for category in [*ordered(rows), *([NEW] if NEW in rows else [])]:
        row = rows[category]
        lines.append((category, str(row["before"]), str(row["safe"]), str(row["unsafe"])))
    return markdown_table(("category", "sites before", "after --fix", "after --unsafe-fixes"), lines)


def short(path: str) -> str:
    marker = f"site-packages{os.sep}"
    return path.split(marker, 1)[1] if marker in path else path


def model_rows(entries: list[ModelMode]) -> list[list[str]]:
    rows = []
    for entry in sorted(entries, key=lambda e: (e.model_type, e.mode)):
        if entry.state != "breaking":
            continue
        safe, unsafe = entry.levels.get("safe"), entry.levels.get("unsafe")

        def after(outcome: LevelOutcome | None) -> str:
            return "?" if outcome is None else str(outcome.after)

        def fullgraph(outcome: LevelOutcome | None) -> str:
            return "?" if outcome is None else flag(outcome.fullgraph_after, "passes", "fails")

        def equal(outcome: LevelOutcome | None, grads: bool = False) -> str:
            if outcome is None:
                return "?"
            if outcome.status == "same code":
                return "same code"
            return flag(outcome.gradients_equal if grads else outcome.outputs_equal)

        left = sorted({entry.categories.get(k, "?") for k in (unsafe.remaining if unsafe else entry.categories)})
        rows.append([
            entry.model_type, entry.mode, f"{entry.before} -> {after(safe)} -> {after(unsafe)}",
            f"{flag(entry.fullgraph_before, 'passes', 'fails')} -> {fullgraph(safe)} -> {fullgraph(unsafe)}",
            f"{equal(safe)} / {equal(unsafe)}",
            "-" if entry.mode == "eval" else f"{equal(safe, True)} / {equal(unsafe, True)}",
            ", ".join(unsafe.fixes) if unsafe else "-",
            "; ".join(left) or "-",
            "yes" if entry.verified else "scan only",
        ])
    return rows


MODEL_HEADER = ("type", "mode", "sites before -> --fix -> --unsafe-fixes", "fullgraph", "outputs equal (safe / unsafe)",
                "gradients equal", "fixes (unsafe)", "categories left", "verified")


def site_rows(entries: list[ModelMode]) -> list[list[str]]:
    """Every logged site of a breaking model-mode, with its category and whether each level removed it."""
    import linecache

    rows = []
    for entry in sorted(entries, key=lambda e: (e.model_type, e.mode)):
        for site in entry.sites:
            key = site_key(site)
            status = []
            for level in LEVELS:
                outcome = entry.levels.get(level)
                kept = outcome is None or (key[0], key[1]) in {(r[0], r[1]) for r in outcome.remaining}
                status.append("?" if not entry.verified else ("left" if kept else "removed"))
            rows.append([entry.model_type, entry.mode, f"{short(site['filename'])}:{site['line']}",
                         site.get("gb_id") or "-", entry.categories.get(key, "?"), *status,
                         linecache.getline(site["filename"], site["line"]).strip()[:70]])
    return rows


SITE_HEADER = ("type", "mode", "site", "GB", "category", "--fix", "--unsafe-fixes", "code")


def report_json(entries: list[ModelMode], versions: dict[str, str], extra: dict[str, Any]) -> dict[str, Any]:
    def total_json(modes: tuple[str, ...]) -> dict[str, Any]:
        total = totals(entries, modes)
        return {"model_modes": total.models, "before": total.before, "after": total.after,
                "removed_percent": {level: total.removed_percent(level) for level in LEVELS},
                "fixed_to_zero": total.fixed_to_zero, "fullgraph_before": total.fullgraph_before,
                "fullgraph_after": total.fullgraph_after, "output_changes": total.output_changes,
                "gradient_changes": total.gradient_changes, "failures": total.failures,
                "categories": category_rows(entries, modes)}

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "versions": versions,
        **extra,
        "totals": {"eval": total_json(("eval",)), "train": total_json(("train",)), "together": total_json(MODES)},
        "categories_known": list(CATEGORIES),
        "model_modes": [
            {"model_type": e.model_type, "mode": e.mode, "state": e.state, "verified": e.verified,
             "before": e.before, "graphs": e.graphs, "skipped_frames": e.skipped_frames,
             "fullgraph_before": e.fullgraph_before,
             "sites": [{**s, "category": e.categories.get(site_key(s))} for s in e.sites],
             "levels": {level: vars(outcome) for level, outcome in e.levels.items()}}
            for e in entries
        ],
    }


def main(chosen: list[tuple[str, str | None]], cache_dir: Path, versions: dict[str, str],
         options: argparse.Namespace) -> int:
    """Print the census tables from the caches (``hf_census.py --stage report``)."""
    from hf_census import UNKNOWN, cached_scan, cached_verify_result, scan_skip

    entries = []
    sub_configs = sum(1 for _, c in chosen if c is None)
    for model_type, model_class in chosen:
        if model_class in (None, UNKNOWN):
            continue
        for mode in MODES:
            entries.append(model_mode(model_type, mode, cached_scan(cache_dir, model_type, mode),
                                      cached_verify_result(cache_dir, model_type, mode), scan_skip))
    categorise_all(entries)
    print(f"transformers {versions['transformers']}, torch {versions['torch']}, Python {versions['python']}\n")
    print(coverage_table(entries, len(chosen), sub_configs))
    print("\n" + totals_table(entries))
    for label, modes in (("eval", ("eval",)), ("train", ("train",)), ("eval and train together", MODES)):
        print(f"\nper category, {label}:\n" + category_table(entries, modes))
    print("\n" + markdown_table(MODEL_HEADER, model_rows(entries)))
    if options.models_table:
        print("\n" + markdown_table(SITE_HEADER, site_rows(entries)))
    if options.json:
        extra = {"enumerated": len(chosen), "sub_configs": sub_configs}
        options.json.write_text(json.dumps(report_json(entries, versions, extra), indent=1, default=list) + "\n")
    return 0
