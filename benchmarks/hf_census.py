"""Census of the installed transformers (issue 9 §3): ``graphmend-lint verify hf:<type>`` over every model type.

Every model type of ``transformers.CONFIG_MAPPING`` whose base model class
(``AutoModel``'s mapping) exists is verified with
``graphmend-lint verify hf:<type> --unsafe-fixes --json ...``: a tiny random
model from its config, generic dummy inputs by modality, Dynamo's break
sites before and after graphmend-lint's fixes (applied in memory), output
equality and the reconciliation of runtime break sites with the static
findings. The others are skipped and counted with the reason:

* ``no AutoModel class``: the type has no base model in ``AutoModel``'s mapping;
* ``config cannot build``: the tiny config or the model cannot be built from it;
* ``missing dependency``: building needs a package that is not installed;
* ``no dummy inputs``: verify has no generic inputs for the model's main input;
* ``forward fails on dummy inputs``: the model raises on the generic inputs;
* ``timeout``: an arm ran past ``--timeout``;
* ``verify error``: anything else that kept verify from measuring (listed).

Reported: models with breaks, total splitting break sites before and after
and the share removed (the GraphMend paper v4: 73% of 147 breaks over 27
models), explain's breaks (graphs - 1) likewise, outputs-equal failures (must
be 0), fixes that increased breaks, and the recall of runtime break sites by
the linter (found / (found + missed), sites in linted files).

It takes long (about a minute a model on 2 CPU cores), so each model's result
is cached under ``--cache-dir/<transformers version>/<type>.json`` and a
re-run skips models already done (``--no-resume`` measures them again).
Examples::

    python benchmarks/hf_census.py --limit 20
    python benchmarks/hf_census.py --only longformer,led,big_bird,reformer --json census.json
    /tmp/tf452/bin/python benchmarks/hf_census.py --only bert,gpt2        # another environment
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from verify_runs import (
    VerifyRun,
    arm_counts,
    arm_environment,
    cached_verify,
    fixes_applied,
    interpreter_versions,
    markdown_table,
    missed_sites,
    progress,
    site_recall,
    yes_no,
)

UNKNOWN = "unknown model type"
NO_CLASS = "no AutoModel class"
CONFIG = "config cannot build"
DEPENDENCY = "missing dependency"
NO_INPUTS = "no dummy inputs"
FORWARD = "forward fails on dummy inputs"
TIMEOUT = "timeout"
VERIFY_ERROR = "verify error"
#: Substrings of verify's error detail, first match wins (see graphmend_lint/verify/arm.py and hf.py).
ERROR_CLASSES = (
    ("timed out", TIMEOUT),
    ("no dummy inputs", NO_INPUTS),
    ("ModuleNotFoundError", DEPENDENCY),
    ("requires the", DEPENDENCY),
    ("ImportError", DEPENDENCY),
    ("cannot build", CONFIG),
    ("invalid config", CONFIG),
    ("did not build a PreTrainedModel", CONFIG),
    ("factory failed", CONFIG),
    ("callable failed", FORWARD),
)

LIST_TYPES = """
import json
from transformers import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
def name(value):
    return value[0] if isinstance(value, (tuple, list)) else value
print(json.dumps([[t, name(MODEL_MAPPING_NAMES[t]) if t in MODEL_MAPPING_NAMES else None]
                  for t in sorted(CONFIG_MAPPING.keys())]))
"""


@dataclass
class Entry:
    """One model type: measured (``run`` with both arms) or skipped (``skip`` says why)."""

    model_type: str
    model_class: str | None
    run: VerifyRun | None = None
    skip: str | None = None
    cached: bool = False

    @property
    def result(self) -> dict[str, Any] | None:
        return self.run.result if self.run else None

    @property
    def detail(self) -> str:
        if self.result is not None:
            return self.result.get("detail", "")
        return self.run.stderr_tail[-300:] if self.run else ""


def model_types(python: str) -> list[tuple[str, str | None]]:
    """``(model_type, base model class or None)`` for every config of *python*'s transformers."""
    completed = subprocess.run([python, "-c", LIST_TYPES], capture_output=True, text=True, check=True,
                               env=arm_environment())
    return [(t, c) for t, c in json.loads(completed.stdout.strip().splitlines()[-1])]


def select(types: list[tuple[str, str | None]], only: str | None, limit: int | None) -> list[tuple[str, str | None]]:
    """``--only`` (in the order given) then ``--limit``; an unknown name keeps :data:`UNKNOWN` as its class."""
    if only:
        known = dict(types)
        types = [(name, known.get(name, UNKNOWN)) for name in (n.strip() for n in only.split(",")) if name]
    return types[:limit] if limit else types


def classify(run: VerifyRun) -> str | None:
    """The skip reason of a run, or ``None`` when verify measured both arms (pass or fail)."""
    result = run.result
    if result is None:
        return TIMEOUT if run.returncode is None else VERIFY_ERROR
    if result["status"] != "error":
        return None
    detail = result.get("detail", "")
    return next((reason for needle, reason in ERROR_CLASSES if needle in detail), VERIFY_ERROR)


def census_entry(model_type: str, model_class: str | None, options: argparse.Namespace, cache_dir: Path) -> Entry:
    if model_class is None or model_class == UNKNOWN:
        return Entry(model_type, None, skip=model_class or NO_CLASS)
    arguments = ["--device", options.device, "--timeout", str(options.timeout)]
    run, cached = cached_verify(cache_dir / f"{model_type}.json", options.python, f"hf:{model_type}", arguments,
                                options.timeout * 2 + 600, options.resume)
    return Entry(model_type, model_class, run, classify(run), cached)


# -- aggregation (pure: tested on synthetic results) -----------------------------------------------


@dataclass
class Aggregate:
    """The census totals. Breaks are splitting sites (verify's ``breaks``) unless named ``explain``."""

    enumerated: int = 0
    measured: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    models_with_breaks: int = 0
    models_fixed_to_zero: int = 0
    breaks_before: int = 0
    breaks_after: int = 0
    explain_before: int = 0
    explain_after: int = 0
    skipped_frames_before: int = 0
    skipped_frames_after: int = 0
    outputs_equal_failures: list[str] = field(default_factory=list)
    more_breaks: list[str] = field(default_factory=list)
    fixed_code_fails: list[str] = field(default_factory=list)
    sites_found: int = 0
    sites_in_scope: int = 0
    sites_outside_scope: int = 0

    @staticmethod
    def share(before: int, after: int) -> float | None:
        return None if not before else 100.0 * (before - after) / before

    @property
    def removed_percent(self) -> float | None:
        return self.share(self.breaks_before, self.breaks_after)

    @property
    def explain_removed_percent(self) -> float | None:
        return self.share(self.explain_before, self.explain_after)

    @property
    def recall(self) -> float | None:
        return None if not self.sites_in_scope else self.sites_found / self.sites_in_scope


def aggregate(entries: list[Entry]) -> Aggregate:
    total = Aggregate(enumerated=len(entries))
    for entry in entries:
        if entry.skip is not None:
            total.skipped[entry.skip] = total.skipped.get(entry.skip, 0) + 1
            continue
        total.measured += 1
        add_measured(total, entry.model_type, entry.result or {})
    return total


def add_measured(total: Aggregate, name: str, result: dict[str, Any]) -> None:
    """Add one measured model (both arms ran, or the fixed arm failed) to the totals."""
    before = arm_counts(result, "original")
    after = arm_counts(result, "fixed")
    assert before is not None
    if result.get("outputs_equal") is False:
        (total.fixed_code_fails if after is None else total.outputs_equal_failures).append(name)
    after = after or before  # a fixed arm that failed removed nothing
    if after["breaks"] > before["breaks"]:
        total.more_breaks.append(name)
    total.models_with_breaks += before["breaks"] > 0
    total.models_fixed_to_zero += before["breaks"] > 0 and after["breaks"] == 0
    total.breaks_before += before["breaks"]
    total.breaks_after += after["breaks"]
    total.explain_before += max(before["explain_breaks"], 0)
    total.explain_after += max(after["explain_breaks"], 0)
    total.skipped_frames_before += before["skipped_frames"]
    total.skipped_frames_after += after["skipped_frames"]
    found, in_scope = site_recall(result)
    total.sites_found += found
    total.sites_in_scope += in_scope
    total.sites_outside_scope += ((result.get("reconciliation") or {}).get("outside_scope") or 0)


# -- rendering ------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def summary_table(total: Aggregate) -> str:
    recall = "-" if total.recall is None else f"{total.sites_found}/{total.sites_in_scope} ({100 * total.recall:.0f}%)"
    rows = [
        ("model types enumerated", str(total.enumerated)),
        ("measured (both arms ran)", str(total.measured)),
        *((f"skipped: {reason}", str(count)) for reason, count in sorted(total.skipped.items())),
        ("models with splitting breaks", str(total.models_with_breaks)),
        ("... of which fixed to 0", str(total.models_fixed_to_zero)),
        ("splitting break sites before -> after",
         f"{total.breaks_before} -> {total.breaks_after} ({percent(total.removed_percent)} removed)"),
        ("explain breaks (graphs - 1) before -> after",
         f"{total.explain_before} -> {total.explain_after} ({percent(total.explain_removed_percent)} removed)"),
        ("skipped frames before -> after", f"{total.skipped_frames_before} -> {total.skipped_frames_after}"),
        ("outputs-equal failures", f"{len(total.outputs_equal_failures)} {' '.join(total.outputs_equal_failures)}"),
        ("fixed code raises", f"{len(total.fixed_code_fails)} {' '.join(total.fixed_code_fails)}"),
        ("more splitting breaks after the fix", f"{len(total.more_breaks)} {' '.join(total.more_breaks)}"),
        ("runtime break sites found by the linter (recall)", recall),
        ("break sites outside the linted files", str(total.sites_outside_scope)),
    ]  # fmt: skip
    return markdown_table(("census", "value"), [(k, v.strip()) for k, v in rows])


def model_row(entry: Entry) -> list[str]:
    result = entry.result or {}
    before, after = arm_counts(result, "original"), arm_counts(result, "fixed")
    if entry.skip is not None or before is None:
        return [entry.model_type, entry.model_class or "-", "-", "-", "-", "-", "-", "-", f"skipped: {entry.skip}"]

    def change(key: str) -> str:  # a fixed arm that raised has no counts
        return f"{before[key]} -> {after[key] if after else '?'}"

    found, in_scope = site_recall(result)
    return [entry.model_type, entry.model_class or "-", change("graphs"), change("breaks"), change("explain_breaks"),
            yes_no(result.get("outputs_equal")), f"{found}/{in_scope}", ", ".join(fixes_applied(result)) or "-",
            result["status"].upper()]


MODEL_HEADER = ("type", "class", "graphs", "break sites", "explain breaks", "outputs equal", "found/in scope",
                "fixes", "status")  # fmt: skip


def details(entries: list[Entry]) -> list[str]:
    """Skips other than the obvious ones, failures, and missed sites, one line each."""
    lines = []
    for entry in entries:
        if entry.skip not in (None, NO_CLASS):
            lines.append(f"{entry.model_type}: skipped ({entry.skip}): {entry.detail.strip()[:300]}")
        elif entry.result and entry.result["status"] == "fail":
            lines.append(f"{entry.model_type}: FAIL: {entry.detail}")
        for site in missed_sites(entry.result) if entry.skip is None else []:
            lines.append(f"{entry.model_type}: linter missed {site}")
    return lines


def report_json(entries: list[Entry], total: Aggregate, versions: dict[str, str], argv: list[str]) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "versions": versions,
        "argv": argv,
        "aggregate": asdict(total) | {"removed_percent": total.removed_percent,
                                      "explain_removed_percent": total.explain_removed_percent,
                                      "recall": total.recall},
        "models": [{"model_type": e.model_type, "model_class": e.model_class, "skip": e.skip, "cached": e.cached,
                    "detail": e.detail, "run": e.run.to_json() if e.run else None} for e in entries],
    }


# -- driver ---------------------------------------------------------------------------------------


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter whose torch and transformers to measure (default: this one)")
    parser.add_argument("--only", help="comma-separated model types, in this order (default: every type)")
    parser.add_argument("--limit", type=int, help="at most this many types (after --only)")
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="skip models whose result is cached for the same command (default on)")
    parser.add_argument("--cache-dir", type=Path, default=Path(".graphmend_census"),
                        help="per-model results (default .graphmend_census/ in the current directory)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per arm (default 300)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="passed to verify")
    parser.add_argument("--json", type=Path, help="write the aggregate and every model's result here")
    parser.add_argument("--models-table", action="store_true", help="also print a row per model")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options = parse_arguments(argv)
    versions = interpreter_versions(options.python)
    cache_dir = options.cache_dir / versions["transformers"]
    chosen = select(model_types(options.python), options.only, options.limit)
    entries = []
    for index, (model_type, model_class) in enumerate(chosen, 1):
        entry = census_entry(model_type, model_class, options, cache_dir)
        state = entry.skip or entry.result["status"]  # type: ignore[index]
        progress(f"[{index}/{len(chosen)}] {model_type}: {state}{' (cached)' if entry.cached else ''}")
        entries.append(entry)
    total = aggregate(entries)
    print(f"transformers {versions['transformers']}, torch {versions['torch']}, Python {versions['python']}\n")
    print(summary_table(total))
    if options.models_table:
        print("\n" + markdown_table(MODEL_HEADER, [model_row(e) for e in entries]))
    print("\n" + "\n".join(details(entries)))
    if options.json:
        options.json.write_text(json.dumps(report_json(entries, total, versions, sys.argv[1:]), indent=1) + "\n")
    counts = Counter(e.result["status"] for e in entries if e.skip is None and e.result)
    return 1 if counts.get("fail") else 0


if __name__ == "__main__":
    sys.exit(main())
