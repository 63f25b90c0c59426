"""The acid test per program: when every break Dynamo logged got a fix, does ``fullgraph=True`` pass after it?

``run.py``'s "fullgraph after / eligible" column counts a program as eligible
when each logged GB id is one *some* rule fixes; a fix that was declined on
that very line still counts. This reads a ``run.py --mode fix --json`` file
and asks the stricter question the issue states: for the programs whose every
logged line carries a finding with an applicable fix in that mode, how many
compile whole after ``--fix`` (``--fix --unsafe-fixes``)? Held-out programs are
reported as counts only; their answers are in the JSON only when ``run.py``
was given ``--show-heldout-details``.

    python -m tests.corpus.run --mode fix --show-heldout-details --json out.json > /dev/null
    python -m tests.corpus.acid out.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from graphmend_lint import lint_source
from graphmend_lint.diagnostics import Applicability
from tests.corpus import layout
from tests.corpus.score import passes_fullgraph

APPLIED = {"safe": {Applicability.SAFE}, "unsafe": {Applicability.SAFE, Applicability.UNSAFE}}


def fixed_lines(program: layout.Program, mode: str) -> set[int]:
    """Lines whose every finding has a fix ``--fix`` (or ``--unsafe-fixes``) would apply.

    A line with one finding left unfixed still holds that break: EDM's sampler line
    ``min(S_churn / num_steps, np.sqrt(2) - 1) if S_min <= t_cur <= S_max else 0`` gets GM403's
    fix for ``np.sqrt`` and none for GM103's tensor condition, which is the break Dynamo logs.
    """
    findings = lint_source(program.path.read_text(encoding="utf-8"), str(program.path))
    applied = [d.fix is not None and bool(d.fix.edits) and d.fix.applicability in APPLIED[mode] for d in findings]
    fixed = {d.start.line for d, fix in zip(findings, applied) if fix}
    return fixed - {d.start.line for d, fix in zip(findings, applied) if not fix}


def acid(programs: list[layout.Program], answers: dict[str, Any], mode: str) -> tuple[int, list[str]]:
    """How many programs had every logged line fixed, and those of them that still fail fullgraph."""
    eligible, failing = 0, []
    for program in programs:
        answer = answers.get(program.name)
        if not answer or not answer["original"]["sites"]:
            continue
        lines = fixed_lines(program, mode)
        if not all(line in lines for line, *_ in answer["original"]["sites"]):
            continue
        eligible += 1
        if not passes_fullgraph(answer["variants"].get(mode) or answer["original"]):
            failing.append(program.name)
    return eligible, failing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.corpus.acid", description=__doc__.splitlines()[0])
    parser.add_argument("run_json", type=Path, help="the --json file of `python -m tests.corpus.run --mode fix`")
    args = parser.parse_args(argv)
    answers = json.loads(args.run_json.read_text(encoding="utf-8"))["answers"]
    for split in layout.SPLITS:
        programs = layout.discover(split)
        if not any(program.name in answers for program in programs):
            print(f"{split}: no per-program answers in {args.run_json}")
            continue
        for mode in APPLIED:
            eligible, failing = acid(programs, answers, mode)
            shown = failing if split == "dev" else len(failing)
            print(f"{split} {mode}: fullgraph passes for {eligible - len(failing)} of {eligible}; failing: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
