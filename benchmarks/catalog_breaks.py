"""Which graph breaks each construct of the rule catalog logs, measured with Dynamo now.

Every ``rules/GMxxx/bad_*.py`` program is one construct taken from real code. This runs
each in a fresh worker (the corpus harness, ``tests/corpus``) and prints, per rule, the
program, the GB ids Dynamo logged and which of them the rule declares in ``Rule.dynamo_gb``
(a program may also log a neighbouring construct's break):
the table issue 14's closing note asks for ("every construct measured, with its GB id, and
whether it breaks"), reproducible instead of written down by hand.

    python benchmarks/catalog_breaks.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from graphmend_lint.rules import all_rules  # noqa: E402
from tests.corpus.pool import run_tasks  # noqa: E402


def _programs() -> list[Path]:
    return sorted((REPO / "rules").glob("GM*/bad_*.py"))


def _declared() -> dict[str, set[str]]:
    return {rule.code: set(rule.dynamo_gb) for rule in all_rules()}


def _row(program: Path, answer: dict[str, Any], declared: dict[str, set[str]]) -> dict[str, Any]:
    code = program.parent.name
    if "failure" in answer:
        return {"code": code, "program": program.name, "logged": [], "breaks": None, "declared": [],
                "note": answer["failure"]}
    original = answer["original"]
    logged = sorted({site[1] for site in original["sites"]} | {site[2] for site in original["foreign_sites"]})
    return {
        "code": code,
        "program": program.name,
        "logged": logged,
        "breaks": bool(logged),
        "declared": sorted(set(logged) & declared.get(code, set())),
        "note": original["error"] or "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    programs = _programs()
    tasks = [{"name": f"{p.parent.name}_{p.stem}", "path": str(p), "behaviour": False, "variants": {}} for p in programs]
    answers = run_tasks(tasks, timeout=600)
    declared = _declared()
    rows = [_row(p, answers[f"{p.parent.name}_{p.stem}"], declared) for p in programs]
    print("| rule | construct (catalog program) | GB ids logged | breaks | of them declared by the rule |")
    print("|---|---|---|---|---|")
    for row in rows:
        breaks = {True: "yes", False: "**no**", None: "not measured"}[row["breaks"]]
        print(f"| {row['code']} | `{row['program']}` | {', '.join(row['logged']) or '-'} | {breaks} "
              f"| {', '.join(row['declared']) or '**none**'} |")
    print(f"\n{sum(bool(r['breaks']) for r in rows)} of {len(rows)} constructs log a break")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
