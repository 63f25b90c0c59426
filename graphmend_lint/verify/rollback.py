"""``graphmend-lint --fix --verify``: keep a file's fixes only if verification backs them.

The fixes are already on disk. For each configured target, the original arm
compiles the changed files' ORIGINAL texts and the fixed arm their fixed
texts, both through the import hook (:class:`ReplaceTransform`), so the
measurement does not depend on what is on disk while it runs.

A file's fixes are judged by the targets that ran its changed lines:

* ``worse``: outputs changed, the fixed code failed, it has more logged
  breaks than the original, or ``torch.compile(fullgraph=True)`` passed
  before and fails after, so it is rolled back;
* ``not reduced``: its changed lines ran but Dynamo still logs as many
  breaks, so it is rolled back (a fix that removes no break is churn: a
  ``print`` moved to the end of a function still breaks the graph there,
  although ``explain`` then counts no break);
* ``improved``: kept;
* no target ran its changed lines (or no target could run): kept, reported
  as unverified, since nothing measured says it is wrong.

Each file is judged alone (the other changed files kept original) against
one original run per target, so one bad fix does not take good ones down
with it; files that each improve are then run together once, and rolled
back together if the combination is worse (interactions are rare, but the
combination is what stays on disk).
"""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graphmend_lint.analysis.imports import module_name_for
from graphmend_lint.config import Settings
from graphmend_lint.verify.hook import ReplaceTransform
from graphmend_lint.verify.results import ArmResult
from graphmend_lint.verify.runner import ArmCrashed, ArmError, ArmPlan, Progress, RunOptions, TargetSession
from graphmend_lint.verify.targets import HfOptions, TargetError, targets_from_strings

if TYPE_CHECKING:
    from graphmend_lint.engine import FileReport, RunReport

IMPROVED, NOT_REDUCED, WORSE, UNEXERCISED = "improved", "not reduced", "worse", "unexercised"
KEPT, ROLLED_BACK, UNVERIFIED = "kept", "rolled back", "unverified"


@dataclass
class FileVerdict:
    """What happened to one fixed file, and the per-target evidence."""

    path: str
    action: str = UNVERIFIED
    evidence: list[str] = field(default_factory=list)  # "target: verdict (detail)"


@dataclass
class RollbackReport:
    files: dict[str, FileVerdict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def rolled_back(self) -> list[str]:
        return [path for path, verdict in self.files.items() if verdict.action == ROLLED_BACK]

    def lines(self) -> list[str]:
        """One line per file, for the CLI."""
        return [
            f"{path}: {verdict.action}" + (f" ({'; '.join(verdict.evidence)})" if verdict.evidence else "")
            for path, verdict in sorted(self.files.items())
        ]


def changed_files_from_reports(reports: Iterable[FileReport]) -> dict[str, tuple[bytes, bytes]]:
    """``{path: (original_bytes, fixed_bytes)}`` for files a ``--fix`` run wrote.

    The fixed bytes are read back from disk; the original bytes are the
    original text encoded the way the engine encoded the fix (same encoding
    and BOM), which reproduces the file as it was.
    """
    from graphmend_lint.source import SourceFile

    changed = {}
    for report in reports:
        if report.fixed_source is None or report.source is None or report.errors or report.fix_errors:
            continue
        fixed_bytes = Path(report.path).read_bytes()
        on_disk = SourceFile.from_bytes(fixed_bytes)
        if on_disk.text != report.fixed_source:
            continue  # the write did not happen (or the file changed since)
        changed[report.path] = (on_disk.to_bytes(report.source), fixed_bytes)
    return changed


def changed_lines(original: str, fixed: str) -> set[int]:
    """1-based lines of ``fixed`` that a fix inserted or replaced (deletions mark the next line)."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), fixed.splitlines(), autojunk=False)
    lines: set[int] = set()
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        lines.update(range(j1 + 1, j2 + 1) if j2 > j1 else {j1 + 1})
    return lines


def _decode(data: bytes) -> str:
    return importlib.util.decode_source(data)


def _verdict(original: ArmResult, fixed: ArmResult | str, path: str, lines: set[int]) -> tuple[str, str]:
    """One target's verdict on one fixed variant, judged for the file at ``path``."""
    if isinstance(fixed, str):
        return WORSE, f"the fixed code fails: {fixed.splitlines()[0] if fixed else ''}"
    equivalence = fixed.equivalence or {}
    if not equivalence.get("outputs_equal", False):
        return WORSE, f"outputs differ: {equivalence.get('detail', '?')}"
    before, after = original.logged_sites, fixed.logged_sites
    counts = f"logged breaks {before} -> {after}"
    if after > before:
        return WORSE, counts
    if original.fullgraph_passes and fixed.fullgraph_passes is False:
        return WORSE, "fullgraph=True passed before and fails after"
    ran = {os.path.realpath(f): set(ls) for f, ls in fixed.executed.items()}.get(os.path.realpath(path), set())
    if not lines & ran:
        return UNEXERCISED, "its changed lines did not run"
    if after == before:
        return NOT_REDUCED, counts
    return IMPROVED, counts


def verify_and_rollback(
    changed_files: Mapping[str, tuple[bytes, bytes]],
    targets: Sequence[str],
    settings: Settings,
    options: RunOptions | None = None,
    progress: Progress = lambda message: None,
    hf: HfOptions | None = None,
) -> RollbackReport:
    """Verify the fixed files against ``targets`` and restore those whose fixes did not help.

    ``settings`` supplies the root that relative targets resolve against.
    Files are restored atomically, and only if they still hold the fixed
    bytes (a file edited meanwhile is reported, not overwritten).
    """
    options = options or RunOptions()
    report = RollbackReport({path: FileVerdict(path) for path in changed_files})
    if not changed_files:
        return report
    texts = {os.path.realpath(p): (_decode(o), _decode(f)) for p, (o, f) in changed_files.items()}
    real_of = {path: os.path.realpath(path) for path in changed_files}
    scope = tuple(sorted({module_name_for(path)[0] for path in changed_files}))
    all_original = ReplaceTransform({real: pair[0] for real, pair in texts.items()})
    changed = {path: changed_lines(*texts[real]) for path, real in real_of.items()}
    verdicts: dict[str, list[str]] = {path: [] for path in changed_files}
    try:
        specs = targets_from_strings(targets, Path(settings.root), hf or HfOptions())
    except TargetError as error:
        report.errors.append(str(error))
        return report

    for target in specs:
        with TargetSession(target, options, progress) as session:
            try:
                original = session.run_original(ArmPlan(scope, all_original))
            except (ArmError, ArmCrashed) as error:
                report.errors.append(f"cannot verify with {target.text}: {error}")
                continue

            def fixed_only(paths: Iterable[str]) -> ArmResult | str:
                chosen = {real_of[p] for p in paths}
                replaced = {real: pair[1] if real in chosen else pair[0] for real, pair in texts.items()}
                return session.run_fixed(ArmPlan(scope, ReplaceTransform(replaced)))

            loaded = {os.path.realpath(m["filename"]) for m in original.modules}
            results = {
                path: _verdict(original, fixed_only([path]), path, changed[path])
                for path in changed_files
                if real_of[path] in loaded
            }
            improved = [path for path, (verdict, _) in results.items() if verdict == IMPROVED]
            if len(improved) > 1:  # each helps alone; make sure they do not hurt together
                together, detail = _verdict(original, fixed_only(improved), improved[0], set())
                if together == WORSE:
                    results.update({p: (WORSE, f"together with the other improved files: {detail}") for p in improved})
            for path, (verdict, detail) in results.items():
                verdicts[path].append(verdict)
                report.files[path].evidence.append(f"{target.text}: {verdict} ({detail})")

    for path, seen in verdicts.items():
        file_verdict = report.files[path]
        if WORSE in seen or NOT_REDUCED in seen:
            file_verdict.action = _restore(path, *changed_files[path], report.errors)
        elif IMPROVED in seen:
            file_verdict.action = KEPT
    return report


def _restore(path: str, original: bytes, fixed: bytes, errors: list[str]) -> str:
    """Write ``original`` back if the file still holds ``fixed``."""
    from graphmend_lint.disk import WriteRefused, write_fix

    target = Path(path)
    try:
        if target.read_bytes() != fixed:
            errors.append(f"{path}: changed on disk since it was fixed; not rolled back")
            return KEPT
        write_fix(target, original)
    except (OSError, WriteRefused) as error:
        errors.append(f"{path}: cannot roll back: {error}")
        return KEPT
    return ROLLED_BACK


def rollback_after_fix(
    result: RunReport,
    paths: Sequence[str],
    settings: Settings,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    options: RunOptions | None = None,
    progress: Progress = lambda message: None,
) -> RollbackReport:
    """The whole of ``--fix --verify`` after a fixing :func:`graphmend_lint.engine.run`.

    Verifies the files ``result`` wrote against ``settings.verify_targets``,
    restores those whose fixes did not help, then re-lints ``paths`` so that
    the findings ``result`` prints match the files as they now are (a rolled
    back file has its findings back and no applied fixes). Updates
    ``result`` in place and returns the rollback report.
    """
    from graphmend_lint.engine import run

    changed = changed_files_from_reports(result.files)
    report = verify_and_rollback(changed, settings.verify_targets, settings, options, progress)
    if report.rolled_back:
        relinted = {f.path: f for f in run(paths, settings, jobs=jobs, use_cache=use_cache).files}
        rolled_back = set(report.rolled_back)
        for file_report in result.files:
            fresh = relinted.get(file_report.path)
            if fresh is not None:
                file_report.diagnostics = fresh.diagnostics
            if file_report.path in rolled_back:
                file_report.applied, file_report.fixed_source = [], None
    return report
