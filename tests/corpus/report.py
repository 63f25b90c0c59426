"""Plain-text tables of the scores (markdown, so docs/corpus.md can quote them as printed)."""

from __future__ import annotations

from collections import Counter

from tests.corpus.families import FAMILY_TITLES
from tests.corpus.score import Detection, FixScore, LineCounts, TrainingCounts


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _row(label: str, counts: LineCounts) -> str:
    return (
        f"| {label} | {counts.logged} | {counts.logged_found} | {_number(counts.recall)} "
        f"| {counts.flagged} | {counts.flagged_correct} | {_number(counts.precision)} "
        f"| {counts.flagged_unobserved} | {_number(counts.precision_observed)} |"
    )


def detection_table(split: str, scope: str, score: Detection) -> str:
    lines = [
        f"Detection, {split}, --scope {scope}: {score.programs} programs, {score.programs_with_breaks} with logged breaks",
        "",
        "| family | logged lines | found | recall | flagged lines | correct | precision | unobserved "
        "| precision (observed) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        _row("**all**", score.overall),
    ]
    lines += [_row(f"{name} {FAMILY_TITLES[name]}", counts) for name, counts in score.families.items()]
    lines += ["", training_summary(score.training), error_path_summary(score)]
    return "\n".join(lines)


def error_path_summary(score: Detection) -> str:
    """One line on the lines left out of the score: a declared exception leaving the compiled call."""
    return (
        f"Error path (not scored): {score.error_path_lines} lines where Dynamo logs only the exception an input set "
        f"declares in RAISING_INPUTS leaving the compiled call (GB0088), {score.error_path_flagged} with a finding"
    )


def training_summary(counts: TrainingCounts) -> str:
    """One line on the training-mode runs (modules built with a submodule in eval mode, run again after .train())."""
    return (
        f"Training mode: {counts.measured} programs run again after .train() ({counts.failed} failed to, "
        f"{counts.unrunnable} with input sets eager cannot run in training); "
        f"{counts.logged_only_in_training} logged lines only in training, {counts.found_only_in_training} found"
    )


def fix_table(split: str, scores: dict[str, FixScore]) -> str:
    lines = [
        f"Fixes, {split} (default scope)",
        "",
        "| mode | programs | changed | logged sites before -> after | removed | fullgraph before -> after "
        "| fullgraph after / eligible | wrong outputs | broken | more breaks | compiled-mode differences |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, s in scores.items():
        flag = "--fix" if mode == "safe" else "--fix --unsafe-fixes"
        lines.append(
            f"| `{flag}` | {s.programs} | {s.changed} | {s.sites_before} -> {s.sites_after} | {_number(s.removed_fraction)} "
            f"| {s.fullgraph_before} -> {s.fullgraph_after} | {s.eligible_fullgraph_after} / {s.eligible} "
            f"| {len(s.wrong_outputs)} | {len(s.broken)} | {len(s.more_breaks)} | {len(s.compiled_differences)} |"
        )
    return "\n".join(lines)


def detection_details(score: Detection) -> str:
    lines = [f"  FN {miss}" for miss in score.misses] + [f"  FP {alarm}" for alarm in score.false_alarms]
    return "\n".join(lines) if lines else "  (no FP, no FN)"


def detection_causes(score: Detection) -> str:
    """Misses and false alarms counted by cause with program names and lines left out.

    This is what the held-out split may show while developing: which break
    kinds and which rule codes the split disagrees on, never where.
    """
    tally: Counter[str] = Counter()
    for miss in score.misses:
        tally["FN " + miss.split(" ", 1)[1]] += 1
    for alarm in score.false_alarms:
        tally["FP " + alarm.split(" ", 1)[1]] += 1
    lines = [f"  {count:3d} x {cause}" for cause, count in sorted(tally.items(), key=lambda item: (item[0][:2], -item[1], item[0]))]
    return "\n".join(lines) if lines else "  (no FP, no FN)"


def fix_details(mode: str, score: FixScore) -> str:
    lines = []
    for title, items in (
        ("wrong output", score.wrong_outputs),
        ("broken by the fix", score.broken),
        ("more breaks", score.more_breaks),
        ("eligible, fullgraph fails after", score.eligible_failing),
        ("compiled-mode difference", score.compiled_differences),
    ):
        lines += [f"  [{mode}] {title}: {item}" for item in items]
    return "\n".join(lines) if lines else f"  [{mode}] (nothing to report)"
