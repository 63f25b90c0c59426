"""Turn the workers' answers into scores: detection per rule family, and what ``--fix`` did.

The unit of detection is a line of a program file. A line Dynamo logs a break
at is *logged*; a line with a finding is *flagged*. TP: flagged and logged;
FP: flagged, not logged; FN: logged, not flagged. Per family, recall counts
the logged lines attributed to the family (``families.Claims.family_of_site``)
that carry any finding, and precision counts the family's flagged lines that
are logged.

An FP on a line Dynamo never traced (no input set reached it, or Dynamo gave
up on its frame after an earlier break and ran it eagerly) is *unobserved*:
Dynamo neither confirmed nor refuted it. So is an FP whose findings all say
the break happens only in some dtypes (``(only in fp16)``) when the program's
inputs and module state hold none of them. It stays an FP in ``precision``;
``precision_observed`` leaves unobserved lines out of the flagged count.

A line where Dynamo logged only "Observed exception" for an input set that
raises the exception the program declares (``dynamo.error_path_sites``) is
the program's error path, not a break: it is neither logged nor, when
flagged, a false alarm; the score counts such lines apart.

Logged lines are those of both modes a module is measured in (``dynamo.py``):
as built and after ``.train()``. A line only the training run logged is a
*training-only* line; the score counts them apart so reports can name them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.corpus.families import FAMILY_ORDER, Claims, family_of_code
from tests.corpus.layout import Program


def ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class LineCounts:
    """Logged and flagged lines of one family (or of everything)."""

    logged: int = 0
    logged_found: int = 0
    flagged: int = 0
    flagged_correct: int = 0
    flagged_unobserved: int = 0  # FPs on lines Dynamo never traced

    @property
    def recall(self) -> float | None:
        return ratio(self.logged_found, self.logged)

    @property
    def precision(self) -> float | None:
        return ratio(self.flagged_correct, self.flagged)

    @property
    def precision_observed(self) -> float | None:
        """Precision over the flagged lines Dynamo traced."""
        return ratio(self.flagged_correct, self.flagged - self.flagged_unobserved)

    def as_json(self) -> dict[str, Any]:
        return {
            "logged": self.logged, "found": self.logged_found, "recall": self.recall,
            "flagged": self.flagged, "correct": self.flagged_correct, "precision": self.precision,
            "unobserved": self.flagged_unobserved, "precision_observed": self.precision_observed,
        }


@dataclass
class TrainingCounts:
    """How the training-mode runs went, and the logged lines only they found."""

    measured: int = 0  # programs run again after .train()
    failed: int = 0  # .train() or make() failed in the training run
    unrunnable: int = 0  # programs with an input set eager cannot run in training mode
    logged_only_in_training: int = 0
    found_only_in_training: int = 0

    def add(self, train: dict[str, Any], only_in_training: set[int], findings: list[list[Any]]) -> None:
        """Count one program's training run (``train``: its answer's ``original["train"]``)."""
        if "skipped" in train and train["skipped"] is None:  # answers made before training runs have no "train"
            self.measured += 1
            self.failed += train["error"] is not None
            self.unrunnable += bool(train["unrunnable"])
        flagged = {line for line, _ in findings}
        self.logged_only_in_training += len(only_in_training)
        self.found_only_in_training += len(only_in_training & flagged)

    def as_json(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Detection:
    """Detection score of one split under one scope."""

    programs: int = 0
    programs_with_breaks: int = 0
    overall: LineCounts = field(default_factory=LineCounts)
    families: dict[str, LineCounts] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)  # "name:line GBxxxx (family) gb_type", "(training only)"
    false_alarms: list[str] = field(default_factory=list)  # "name:line GMxxx", "(unobserved)" when never traced
    training: TrainingCounts = field(default_factory=TrainingCounts)
    error_path_lines: int = 0  # lines of a declared exception leaving the compiled call (not scored)
    error_path_flagged: int = 0  # of those, lines with a finding

    def family(self, name: str) -> LineCounts:
        return self.families.setdefault(name, LineCounts())


def logged_lines(answer: dict[str, Any]) -> dict[int, list[tuple[str, str]]]:
    """``{line: [(gb_id, gb_type), ...]}`` of the original program."""
    lines: dict[int, list[tuple[str, str]]] = {}
    for line, gb_id, gb_type in answer["original"]["sites"]:
        lines.setdefault(line, []).append((gb_id, gb_type))
    return lines


def training_only_lines(answer: dict[str, Any]) -> set[int]:
    """Lines only the training-mode run logged a break at."""
    original = answer["original"]
    sites = {tuple(site) for site in original["sites"]}
    built = sites - {tuple(site) for site in original.get("train", {}).get("train_only_sites", [])}
    return {line for line, *_ in sites} - {line for line, *_ in built}


def measured(answer: dict[str, Any]) -> bool:
    """Whether the original program was measured (no crash, timeout or import error)."""
    return "failure" not in answer and answer["original"]["error"] is None


def undeclared_exceptions(answer: dict[str, Any]) -> list[str]:
    """Eager input sets whose exception differs from what the program declares in RAISING_INPUTS."""
    original = answer["original"]
    declared = {int(k): v for k, v in original.get("declared_raises", {}).items()}
    problems = []
    for index, error in enumerate(original["eager_errors"]):
        raised = error[0] if error else None
        if raised != declared.get(index):
            problems.append(f"input {index}: raised {error} but declares {declared.get(index)}")
    return problems


def detection(programs: Iterable[Program], answers: dict[str, dict[str, Any]], scope: str, claims: Claims) -> Detection:
    score = Detection()
    for program in programs:
        answer = answers[program.name]
        if not measured(answer) or "lint" not in answer:
            continue
        score.programs += 1
        logged = logged_lines(answer)
        score.programs_with_breaks += bool(logged)
        only_in_training = training_only_lines(answer)
        score.training.add(answer["original"].get("train", {}), only_in_training, answer["lint"][scope])
        flagged: dict[int, set[str]] = {}
        for line, code in answer["lint"][scope]:
            flagged.setdefault(line, set()).add(code)
        for line, sites in sorted(logged.items()):
            found = line in flagged
            score.overall.logged += 1
            score.overall.logged_found += found
            finding_families = [family_of_code(code) for code in sorted(flagged.get(line, ()))]
            for family in {claims.family_of_site(gb_id, finding_families) for gb_id, _ in sites}:
                score.family(family).logged += 1
                score.family(family).logged_found += found
            if not found:
                described = ", ".join(f"{gb_id} ({claims.family_of_site(gb_id)}) {gb_type}" for gb_id, gb_type in sites)
                note = " (training only)" if line in only_in_training else ""
                note += _scope_note(line, answer["lint"].get("reached", {}).get(scope))
                score.misses.append(f"{program.name}:{line} {described}{note}")
        error_path = {line for line, *_ in answer["original"].get("error_path_sites", ())} - logged.keys()
        score.error_path_lines += len(error_path)
        score.error_path_flagged += len(error_path & flagged.keys())
        traced = answer["original"].get("traced_lines")
        dtype_not_run = _dtype_gates_not_run(answer, scope)
        for line, codes in sorted(flagged.items()):
            if line in error_path:
                continue
            correct = line in logged
            unobserved = not correct and ((traced is not None and line not in traced) or line in dtype_not_run)
            for counts in (score.overall, *(score.family(f) for f in {family_of_code(code) for code in codes})):
                counts.flagged += 1
                counts.flagged_correct += correct
                counts.flagged_unobserved += unobserved
            if not correct:
                note = f" (unobserved{dtype_not_run.get(line, '')})" if unobserved else ""
                score.false_alarms.append(f"{program.name}:{line} {','.join(sorted(codes))}{note}")
    score.families = {name: score.families[name] for name in FAMILY_ORDER if name in score.families}
    return score


def _scope_note(line: int, reached: list[tuple[int, int]] | None) -> str:
    """`` (outside scope)`` for a missed line in no function the linter's scope analysis reached, when the answer
    records what it reached: a scope miss, not a typing or rule miss."""
    if reached is None or any(first <= line <= last for first, last in reached):
        return ""
    return " (outside scope)"


def _dtype_gates_not_run(answer: dict[str, Any], scope: str) -> dict[int, str]:
    """Flagged lines whose findings all say "only in <dtypes>" for dtypes the program never ran.

    Dynamo cannot log such a break in the run the harness makes, so the line
    is unobserved, like a line it never traced. Values: a note for the details.
    """
    gated = answer["lint"].get("dtype_gated", {}).get(scope, {})
    ran = set(answer["original"].get("float_dtypes", ()))
    return {
        int(line): f": {'/'.join(dtypes)} not run"
        for line, dtypes in gated.items()
        if not ran & set(dtypes)
    }


@dataclass
class FixScore:
    """What one ``--fix`` mode did to one split."""

    programs: int = 0
    changed: int = 0
    sites_before: int = 0
    sites_after: int = 0
    fullgraph_before: int = 0
    fullgraph_after: int = 0
    eligible: int = 0  # programs with breaks, every one of a GB id a rule of this mode fixes
    eligible_fullgraph_after: int = 0
    wrong_outputs: list[str] = field(default_factory=list)  # eager behaviour changed
    broken: list[str] = field(default_factory=list)  # the fixed file no longer imports / make() fails
    more_breaks: list[str] = field(default_factory=list)
    compiled_differences: list[str] = field(default_factory=list)
    eligible_failing: list[str] = field(default_factory=list)

    @property
    def removed_fraction(self) -> float | None:
        return ratio(self.sites_before - self.sites_after, self.sites_before)

    def as_json(self) -> dict[str, Any]:
        return {
            "programs": self.programs, "changed": self.changed,
            "sites_before": self.sites_before, "sites_after": self.sites_after,
            "removed_fraction": self.removed_fraction,
            "fullgraph_before": self.fullgraph_before, "fullgraph_after": self.fullgraph_after,
            "eligible": self.eligible, "eligible_fullgraph_after": self.eligible_fullgraph_after,
            "wrong_outputs": self.wrong_outputs, "broken": self.broken, "more_breaks": self.more_breaks,
            "compiled_differences": self.compiled_differences, "eligible_failing": self.eligible_failing,
        }


def fullgraph_failures(measurement: dict[str, Any]) -> list[str]:
    """Why ``torch.compile(fn, fullgraph=True)`` failed, per input set and mode (empty: it ran every one).

    A training run that could not be made (``train["error"]``) has no fullgraph
    results: like an input set eager cannot run in training, it is recorded
    and counted elsewhere, not held against the program here.
    """
    if measurement["error"] is not None:
        return [measurement["error"]]
    train = measurement.get("train", {})
    failures = [f"input {i}: {failure}" for i, failure in enumerate(measurement["fullgraph"]) if failure]
    failures += [f"train input {i}: {failure}" for i, failure in enumerate(train.get("fullgraph", [])) if failure]
    return failures


def passes_fullgraph(measurement: dict[str, Any]) -> bool:
    """``torch.compile(fn, fullgraph=True)`` ran every input set of this measurement, in each mode measured."""
    return not fullgraph_failures(measurement)


def logged_site_count(measurement: dict[str, Any]) -> int:
    """Distinct logged break sites: in the program file, and in library code it calls (``foreign_sites``).

    A fix that moves a break out of the program into torch's own modules
    (a capture switch whose data-dependent size reaches batch norm's batch
    size check) has not removed it, so those count as well.
    """
    return len(measurement["sites"]) + len(measurement.get("foreign_sites") or ())


def fixes(programs: Iterable[Program], answers: dict[str, dict[str, Any]], mode: str, claims: Claims) -> FixScore:
    score = FixScore()
    for program in programs:
        answer = answers[program.name]
        if not measured(answer):
            continue
        score.programs += 1
        original = answer["original"]
        variant = answer["variants"].get(mode)
        after = variant if variant is not None else original
        score.changed += variant is not None
        before_count, after_count = logged_site_count(original), logged_site_count(after)
        score.sites_before += before_count
        score.sites_after += after_count if after["error"] is None else before_count
        score.fullgraph_before += passes_fullgraph(original)
        score.fullgraph_after += passes_fullgraph(after)
        if variant is not None:
            if variant["error"] is not None:
                score.broken.append(f"{program.name}: {variant['error']}")
            if variant["eager_differences"]:
                score.wrong_outputs.append(f"{program.name}: {variant['eager_differences'][0]}")
            if variant["compiled_differences"]:
                score.compiled_differences.append(f"{program.name}: {variant['compiled_differences'][0]}")
        if after["error"] is None and after_count > before_count:
            score.more_breaks.append(f"{program.name}: {before_count} -> {after_count}")
        if original["sites"] and all(claims.fixable(gb_id, mode == "unsafe") for _, gb_id, _ in original["sites"]):
            score.eligible += 1
            if passes_fullgraph(after):
                score.eligible_fullgraph_after += 1
            else:
                score.eligible_failing.append(f"{program.name}: {fullgraph_failures(after)[0]}")
    return score
