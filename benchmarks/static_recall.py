"""Static recall on real models (issue 14): which logged break sites does ``graphmend-lint --scope modules`` flag?

The census (``hf_census.py``) knows every break site Dynamo logged in the
breaking transformers models, eval and train (the default census and every
``--hf-config`` variant measured, e.g. MoE experts in eager mode). This lints the whole installed
transformers package once, the way a user would (``graphmend-lint
<transformers> --scope modules --output-format json``, a fresh process with
no cache), and counts a site as *flagged* when a finding in the same file
spans its line (Dynamo blames each operand line of a multi-line condition,
and a finding spans its whole node). Sites are distinct ``(file, line)``
pairs in transformers files, over all models and both modes; misses are
listed with their census category.

The lint's findings are cached next to the census (keyed by the linter's
commit), so re-running after more of the census is measured is cheap::

    python benchmarks/static_recall.py                  # reads .graphmend_census/, lints once
    python benchmarks/static_recall.py --json recall.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from break_categories import categorise_site, ordered
from verify_runs import REPO, arm_environment, interpreter_versions, markdown_table, progress

Site = tuple[str, int]


def linter_commit() -> str:
    """The last commit that changed the linter's code, with ``-dirty`` when it has uncommitted changes."""
    head = subprocess.run(["git", "log", "-1", "--format=%H", "--", "graphmend_lint"], cwd=REPO,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "graphmend_lint"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    return head + ("-dirty" if dirty else "")


def transformers_dir() -> Path:
    code = "import os, transformers; print(os.path.dirname(transformers.__file__))"
    return Path(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env=arm_environment()).stdout.strip())


def lint_findings(package: Path, cache: Path, resume: bool) -> tuple[list[dict[str, Any]], float | None]:
    """Every finding of ``graphmend-lint PACKAGE --scope modules`` (JSON rows), and the seconds it took."""
    commit = linter_commit()
    if resume and cache.exists():
        data = json.loads(cache.read_text())
        if data.get("commit") == commit and data.get("package") == str(package):
            return data["findings"], data.get("seconds")
    progress(f"[recall] linting {package} with --scope modules (minutes)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gm-recall-") as directory:
        completed = subprocess.run(
            [sys.executable, "-m", "graphmend_lint", str(package), "--scope", "modules", "--output-format", "json",
             "--exit-zero", "--no-cache"], cwd=directory, capture_output=True, text=True, env=arm_environment())
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"graphmend-lint failed ({completed.returncode}): {completed.stderr[-2000:]}")
    findings = json.loads(completed.stdout)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"commit": commit, "package": str(package), "seconds": seconds,
                                 "findings": findings}) + "\n")
    return findings, seconds


def flagged(sites: Iterable[Site], findings: Iterable[Mapping[str, Any]]) -> dict[Site, list[str]]:
    """For each site, the codes of the findings in its file whose lines span it (empty: missed)."""
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for finding in findings:
        end = (finding.get("end_location") or finding["location"])["row"]
        spans.setdefault(os.path.realpath(finding["filename"]), []).append(
            (finding["location"]["row"], end, finding["code"]))
    return {site: sorted({code for start, end, code in spans.get(os.path.realpath(site[0]), [])
                          if start <= site[1] <= end}) for site in sites}


def _relocated(filename: str, root: str) -> str:
    """*filename* under *root* when it lies in another installation of the same package.

    The census may have run in another virtual environment (another worktree, another
    machine): ``.../site-packages/transformers/models/x.py`` there is ``models/x.py`` here.
    """
    path = os.path.realpath(filename)
    marker = os.sep + os.path.basename(root.rstrip(os.sep)) + os.sep
    if not path.startswith(root) and marker in path:
        return root + path.rsplit(marker, 1)[1]
    return path


def census_sites(package: Path, entries: Iterable[Mapping[str, Any]]) -> dict[Site, dict[str, Any]]:
    """Distinct ``(file, line)`` logged in transformers files by breaking models: site -> one break dict + models."""
    root = os.path.realpath(package) + os.sep
    sites: dict[Site, dict[str, Any]] = {}
    for entry in entries:
        for site in entry["sites"]:
            path = _relocated(site["filename"], root)
            if path.startswith(root):
                known = sites.setdefault((path, int(site["line"])), {"site": site, "models": set()})
                known["models"].add(f"{entry['model_type']} ({entry['mode']})")
    return sites


def recall_rows(sites: Mapping[Site, Mapping[str, Any]], hits: Mapping[Site, Sequence[str]],
                package: Path) -> list[list[str]]:
    rows = []
    for site, info in sorted(sites.items()):
        category = categorise_site(info["site"])[0]
        relative = os.path.relpath(site[0], package.parent)
        rows.append([f"{relative}:{site[1]}", info["site"].get("gb_id") or "-", category,
                     ", ".join(hits[site]) or "MISSED", ", ".join(sorted(info["models"]))])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=Path(".graphmend_census"))
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="reuse the cached lint of the same linter commit (default on)")
    parser.add_argument("--json", type=Path, help="write the sites, hits and misses here")
    options = parser.parse_args(argv)

    import census_report
    from hf_census import MODES, UNKNOWN, cached_scan, cached_verify_result, model_types, scan_skip

    versions = interpreter_versions(sys.executable)
    root = options.cache_dir / versions["transformers"]
    # the default census and every variant measured (e.g. experts_implementation=eager)
    variants = [root, *sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("scan-*")))]
    entries = []
    types = model_types()
    for cache_dir in variants:
        for model_type, model_class in types:
            if model_class in (None, UNKNOWN):
                continue
            for mode in MODES:
                entry = census_report.model_mode(model_type, mode, cached_scan(cache_dir, model_type, mode),
                                                 cached_verify_result(cache_dir, model_type, mode), scan_skip)
                if entry.state == "breaking":
                    label = model_type if cache_dir == root else f"{model_type}[{cache_dir.name}]"
                    entries.append({"model_type": label, "mode": mode, "sites": entry.sites})
    package = transformers_dir()
    sites = census_sites(package, entries)
    findings, seconds = lint_findings(package, root / "static-recall-lint.json", options.resume)
    hits = flagged(sites, findings)
    found = sum(bool(codes) for codes in hits.values())
    rows = recall_rows(sites, hits, package)
    missed_by_category = Counter(row[2] for row in rows if row[3] == "MISSED")
    print(f"transformers {versions['transformers']}: {len(entries)} breaking model-modes, {len(sites)} distinct "
          f"logged sites in transformers files; lint of the package {seconds or 0:.0f} s, {len(findings)} findings")
    print(f"static recall (--scope modules, finding at the logged line): {found}/{len(sites)}"
          + (f" ({100 * found / len(sites):.0f}%)" if sites else ""))
    print("misses by category: " + (", ".join(f"{c} {missed_by_category[c]}" for c in ordered(missed_by_category))
                                    or "none"))
    print("\n" + markdown_table(("site", "GB", "category", "flagged by", "models"), rows))
    if options.json:
        options.json.write_text(json.dumps({"versions": versions, "found": found, "sites": len(sites),
                                            "lint_seconds": seconds, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
