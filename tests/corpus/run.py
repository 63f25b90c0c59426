"""Measure the linter on the corpus: ``python -m tests.corpus.run --help``.

Held-out programs are scored like dev ones, but only aggregates are printed
unless ``--show-heldout-details`` is given, which is for the final report only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.corpus import fixing, layout, lint, pool, report, score
from tests.corpus.families import claims
from tests.corpus.lint import SCOPES

MODES = ("detect", "fix", "truth")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.corpus.run", description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=(*layout.SPLITS, "all"), default="all")
    parser.add_argument("--mode", choices=MODES, default="detect",
                        help="detect: findings vs logged breaks; fix: also --fix and --fix --unsafe-fixes on copies; "
                             "truth: logged breaks only, no linter")
    parser.add_argument("--only", nargs="+", default=(), metavar="SUBSTRING", help="programs whose name contains one")
    parser.add_argument("--gate-sample", action="store_true",
                        help="only the half of each split the test suite's gate measures (layout.in_gate_sample)")
    parser.add_argument("--details", action="store_true", help="list each dev FP/FN and fix problem")
    parser.add_argument("--show-heldout-details", action="store_true",
                        help="list held-out FP/FN and fix problems: for the final report only; never while developing")
    parser.add_argument("--causes", action="store_true",
                        help="count FP/FN by GB id and rule code, without program names (allowed for held-out)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every score and per-program answer")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per program (default 60, fix mode 180)")
    parser.add_argument("--workers", type=int, default=pool.DEFAULT_WORKERS)
    parser.add_argument("--where", nargs="+", metavar="NAME", help="print the split each program name belongs to, and exit")
    parser.add_argument("--reuse-truth", type=Path, metavar="EARLIER.json",
                        help="detect mode: take Dynamo's measurement of each program whose text is unchanged from an "
                             "earlier --json, and only lint it again (seconds instead of minutes, while developing)")
    return parser.parse_args(argv)


def _progress(answer: dict[str, Any]) -> None:
    trouble = answer.get("failure") or answer.get("original", {}).get("error") or answer.get("lint_error")
    mark = "!!" if trouble else ".."
    print(f"{mark} {answer['name']} ({answer.get('seconds', 0):.1f}s){'  ' + trouble if trouble else ''}",
          file=sys.stderr, flush=True)


def _truth_lines(programs: list[layout.Program], answers: dict[str, dict[str, Any]]) -> str:
    lines = []
    for program in programs:
        answer = answers[program.name]
        if not score.measured(answer):
            lines.append(f"{program.split}/{program.name}: NOT MEASURED {answer.get('failure') or answer['original']['error']}")
            continue
        train = answer["original"].get("train", {})
        only_in_training = {tuple(site) for site in train.get("train_only_sites", [])}
        sites = ", ".join(
            f"{line} {gb_id} {gb_type}{' (training only)' if (line, gb_id, gb_type) in only_in_training else ''}"
            for line, gb_id, gb_type in answer["original"]["sites"]
        )
        trouble = "".join(
            f"; training run: {why}" for why in (train.get("error"), *train.get("unrunnable", {}).values()) if why
        )
        lines.append(f"{program.split}/{program.name}: {sites or 'no logged break'}{trouble}")
    return "\n".join(lines)


def _reused_answers(earlier: Path, programs: list[layout.Program]) -> dict[str, dict[str, Any]]:
    """Earlier answers for the programs whose text is unchanged, each linted again by the code of now.

    Dynamo's logged breaks depend on the program and torch alone, so a linter
    change can be scored against them without running Dynamo again. A program
    edited since (or measured before answers carried a digest) is measured anew.
    """
    before = json.loads(earlier.read_text(encoding="utf-8"))["answers"]
    reused = {}
    for program in programs:
        answer = before.get(program.name)
        if answer is None or answer.get("digest") != program.digest or not score.measured(answer):
            continue
        answer = {key: value for key, value in answer.items() if key not in {"lint", "lint_error"}}
        try:
            answer["lint"] = lint.findings(program.path)
        except Exception as error:  # a linter crash is a result, as in the worker
            answer["lint_error"] = f"{type(error).__name__}: {error}"
        reused[program.name] = answer
    print(f"{len(reused)} of {len(programs)} programs: Dynamo's earlier measurement, linted again", file=sys.stderr)
    return reused


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.where:
        for name in args.where:
            print(f"{name}: {layout.split_of(Path(name).stem)}")
        return 0
    programs = layout.discover(args.split, tuple(args.only), args.gate_sample)
    if not programs:
        print("no programs selected", file=sys.stderr)
        return 2
    if args.reuse_truth and args.mode != "detect":
        print("--reuse-truth re-lints only: use it with --mode detect", file=sys.stderr)
        return 2
    started = time.perf_counter()
    reused = _reused_answers(args.reuse_truth, programs) if args.reuse_truth else {}
    timeout = args.timeout or (180.0 if args.mode == "fix" else 60.0)
    with tempfile.TemporaryDirectory(prefix="corpus-fix-") as workdir:
        fix_runs = {}
        if args.mode == "fix":
            for mode in fixing.FIX_MODES:
                fix_runs[mode] = fixing.apply_fixes(programs, mode, Path(workdir), jobs=args.workers)
        tasks = [
            {
                "name": p.name,
                "digest": p.digest,
                "path": str(p.path),
                "lint": args.mode != "truth",
                # truth mode is how a program's author checks it: it runs eager too, so a broken input set shows
                "behaviour": args.mode in ("fix", "truth"),
                "variants": {mode: str(run.changed[p.name]) for mode, run in fix_runs.items() if p.name in run.changed},
            }
            for p in programs
            if p.name not in reused
        ]
        answers = {**reused, **pool.run_tasks(tasks, timeout, args.workers, progress=_progress)}
    elapsed = time.perf_counter() - started
    result = summarize(args, programs, answers, fix_runs, elapsed)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


def summarize(args: argparse.Namespace, programs: list[layout.Program], answers: dict[str, dict[str, Any]],
              fix_runs: dict[str, fixing.FixRun], elapsed: float) -> dict[str, Any]:
    """Print the tables (and allowed details); return everything for ``--json``."""
    rule_claims = claims()
    result: dict[str, Any] = {"mode": args.mode, "seconds": round(elapsed, 1), "gate_sample": args.gate_sample,
                              "splits": {}, "answers": answers,
                              "fix_cli": {m: {"exit_code": r.exit_code, "stderr": r.stderr[-2000:]} for m, r in fix_runs.items()}}
    unmeasured = [name for name, answer in answers.items() if not score.measured(answer) or answer.get("lint_error")]
    # Fix and truth modes run the eager phase; a program whose eager run raises undeclared is broken.
    eager_broken = {
        name: problems
        for name, answer in answers.items()
        if score.measured(answer) and args.mode in ("fix", "truth") and (problems := score.undeclared_exceptions(answer))
    }
    for split in sorted({p.split for p in programs}):
        members = [p for p in programs if p.split == split]
        show = (args.details and split == "dev") or (split == "heldout" and args.show_heldout_details)
        entry: dict[str, Any] = {"programs": len(members), "by_source": {}}
        for p in members:
            entry["by_source"][p.source] = entry["by_source"].get(p.source, 0) + 1
        if args.mode == "truth":
            print(_truth_lines(members, answers))
        else:
            entry["detection"] = {}
            for scope in SCOPES:
                detected = score.detection(members, answers, scope, rule_claims)
                entry["detection"][scope] = {"overall": detected.overall.as_json(),
                                             "training": detected.training.as_json(),
                                             "families": {k: v.as_json() for k, v in detected.families.items()},
                                             "programs": detected.programs,
                                             "programs_with_breaks": detected.programs_with_breaks}
                print(report.detection_table(split, scope, detected) + "\n")
                if show:
                    entry["detection"][scope].update(misses=detected.misses, false_alarms=detected.false_alarms)
                    print(report.detection_details(detected) + "\n")
                elif args.causes:
                    print(report.detection_causes(detected) + "\n")
        if args.mode == "fix":
            fixed = {mode: score.fixes(members, answers, mode, rule_claims) for mode in fixing.FIX_MODES}
            entry["fix"] = {mode: s.as_json() for mode, s in fixed.items()}
            print(report.fix_table(split, fixed) + "\n")
            if show:
                for mode, s in fixed.items():
                    print(report.fix_details(mode, s) + "\n")
            elif split == "heldout":
                # counts stay in the JSON; which programs stays hidden
                for s in entry["fix"].values():
                    for key in ("wrong_outputs", "broken", "more_breaks", "compiled_differences", "eligible_failing"):
                        s[key] = len(s[key])
        result["splits"][split] = entry
    if args.split != "dev" and not args.show_heldout_details:
        result["answers"] = {name: a for name, a in answers.items() if layout.split_of(name) == "dev"}
    for mode, run in fix_runs.items():
        if run.exit_code != 0:
            print(f"!! graphmend_lint {' '.join(fixing.FIX_MODES[mode])} exited {run.exit_code}: {run.stderr[-500:]}")
    result["unmeasured"] = unmeasured
    result["retried"] = {name: answer["retried_after"] for name, answer in answers.items() if "retried_after" in answer}
    result["eager_broken"] = eager_broken
    for name, first_error in sorted(result["retried"].items()):
        print(f"~~ {name}: measured again in a fresh worker after {first_error}")
    if unmeasured:
        print(f"!! not measured ({len(unmeasured)}): {', '.join(sorted(unmeasured))}")
    for name, problems in sorted(eager_broken.items()):
        print(f"!! {name}: eager run {'; '.join(problems)}")
    print(f"# {len(programs)} programs, mode {args.mode}, {elapsed:.0f} s")
    return result


if __name__ == "__main__":
    sys.exit(main())
