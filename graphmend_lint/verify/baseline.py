"""The break baseline of ``graphmend-lint verify --baseline``: fail CI only when real breaks grow.

``--write-baseline FILE`` stores, per target, the graph break sites Dynamo
logged and the recompilations it made while running the ORIGINAL code (no
fix applied); ``--baseline FILE`` measures again and compares. The file is
JSON, one entry a line, sorted, so a reviewer sees a tightened baseline as
deleted lines::

    {
      "graphmend-lint-verify-baseline": 1,
      "targets": {
        "model.py::factory": {
          "sites": [
            {"party": "first-party", "path": "model.py", "gb_id": "GB0059", "source": "print(\\"z\\", z.shape)", "count": 1}
          ],
          "recompiles": []
        }
      }
    }

A site's key is ``(party, path, gb_id, source)``, never its line: ``path`` is
relative to the project root or to ``site-packages`` (:mod:`.attribution`),
``source`` is the break line's text without its comment, blanks collapsed
(the same normalisation as the lint baseline, :func:`graphmend_lint.baseline.flagged_source`).
So inserting lines above a break, re-indenting it or commenting it keeps the
key, and the same break moved to another statement is new. ``count`` keeps
identical lines apart: two ``print(x)`` breaks in one file are two sites.
Dynamo's reason text is left out: rewording it in a new torch release must
not make a whole baseline new. A recompile's key is ``(party, path, function)``
with a count, as its guard text names values that change from run to run.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmend_lint.baseline import BaselineError, flagged_source, read_json_file, write_file
from graphmend_lint.noqa import comments
from graphmend_lint.source import DecodeError, SourceFile
from graphmend_lint.verify.attribution import attribute
from graphmend_lint.verify.results import ArmResult

FORMAT_KEY = "graphmend-lint-verify-baseline"
FORMAT_VERSION = 1
KIND = "break baseline"  # how messages name the file
# Dynamo names the function that resumes after a break by the break's line
# (torch 2.13: ``torch_dynamo_resume_in_step_at_7``); the line must not be in a key.
_RESUME_NAME = re.compile(r"^torch_dynamo_resume_in_(?P<function>.+)_at_\d+$")


@dataclass(frozen=True, order=True)
class SiteKey:
    """What identifies a break site across edits that move it (module docstring)."""

    party: str
    path: str
    gb_id: str
    source: str


@dataclass(frozen=True, order=True)
class RecompileKey:
    """What identifies a recompiled function across edits and runs."""

    party: str
    path: str
    function: str


@dataclass(frozen=True)
class MeasuredSite:
    """A logged break site as measured now: its key plus where it is today, for messages and annotations."""

    key: SiteKey
    filename: str
    line: int
    reason: str
    package: str | None
    column: int = 0  # where the line's code starts (0-based), so annotations underline the code


@dataclass(frozen=True)
class MeasuredRecompile:
    key: RecompileKey
    filename: str
    line: int
    reason: str  # the first failed guard, first line


@dataclass
class Breaks:
    """One target's breaks in key form: what a baseline stores, and what a new run is compared with."""

    sites: Counter[SiteKey] = field(default_factory=Counter)
    recompiles: Counter[RecompileKey] = field(default_factory=Counter)


@dataclass(frozen=True)
class Measurement:
    """One target's original arm, keyed."""

    sites: tuple[MeasuredSite, ...]
    recompiles: tuple[MeasuredRecompile, ...]

    @property
    def breaks(self) -> Breaks:
        return Breaks(Counter(s.key for s in self.sites), Counter(r.key for r in self.recompiles))


@dataclass(frozen=True)
class Comparison:
    """A new measurement against a target's stored baseline (``stored`` None: the target is not in it)."""

    target: str
    measurement: Measurement
    stored: Breaks | None
    new_sites: tuple[MeasuredSite, ...]
    gone_sites: tuple[SiteKey, ...]
    new_recompiles: tuple[MeasuredRecompile, ...]

    @property
    def recompiles_before(self) -> int:
        return sum(self.stored.recompiles.values()) if self.stored else 0

    @property
    def recompiles_after(self) -> int:
        return len(self.measurement.recompiles)

    @property
    def sites_before(self) -> int:
        return sum(self.stored.sites.values()) if self.stored else 0

    @property
    def grew(self) -> bool:
        """Some site or recompilation is not in the baseline: the gate fails."""
        return bool(self.new_sites or self.new_recompiles)

    @property
    def shrank(self) -> bool:
        """Some stored site or recompilation is gone: the baseline could be tightened."""
        return bool(self.gone_sites) or self.recompiles_after < self.recompiles_before


def measure(arm: ArmResult, root: str) -> Measurement:
    """Key the original arm's logged sites and recompilations (reading each break line's source)."""
    lines = _SourceLines()
    sites = []
    for info in sorted(arm.breaks, key=lambda b: (b.filename, b.line)):
        origin = attribute(info.filename, root)
        source, column = lines.normalized(info.filename, info.line)
        key = SiteKey(origin.party, origin.path, info.gb_id or "", source)
        sites.append(MeasuredSite(key, info.filename, info.line, info.reason, origin.package, column))
    recompiles = []
    for data in arm.recompiles or ():
        origin = attribute(data["filename"], root)
        reason = " ".join((str(data["reason"]).splitlines() or [""])[0].split())
        recompiles.append(
            MeasuredRecompile(RecompileKey(origin.party, origin.path, _function(data["function"])), data["filename"],
                              int(data["line"]), reason)
        )
    return Measurement(tuple(sites), tuple(recompiles))


def _function(name: str) -> str:
    """A recompiled function's name without the line number Dynamo puts in a resume function's name."""
    resumed = _RESUME_NAME.match(name)
    return f"{resumed['function']} (resumed after a break)" if resumed else name


def compare(target: str, measurement: Measurement, stored: Breaks | None) -> Comparison:
    """Which sites and recompilations are beyond the stored counts, and which stored ones are gone.

    Of several sites sharing a key, those past the stored count (in line
    order) are the new ones: with line numbers out of the key, which of two
    identical lines is "new" cannot be told, only that one of them is.
    """
    baseline = stored or Breaks()
    return Comparison(
        target,
        measurement,
        stored,
        tuple(_beyond(measurement.sites, baseline.sites)),
        tuple(sorted((baseline.sites - measurement.breaks.sites).elements())),
        tuple(_beyond(measurement.recompiles, baseline.recompiles)),
    )


def _beyond(measured: Iterable[Any], allowed: Mapping[Any, int]) -> list[Any]:
    seen: Counter[Any] = Counter()
    beyond = []
    for item in measured:
        seen[item.key] += 1
        if seen[item.key] > allowed.get(item.key, 0):
            beyond.append(item)
    return beyond


class _SourceLines:
    """Normalised source lines, each file read and tokenized once."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[SourceFile, dict[int, tuple[int, str]]]] = {}

    def normalized(self, filename: str, line: int) -> tuple[str, int]:
        """The line's code without comment, blanks collapsed, and the column it starts at."""
        if filename not in self._files:
            try:
                source = SourceFile.from_bytes(Path(filename).read_bytes())
            except (OSError, DecodeError):
                source = SourceFile("")  # e.g. "<string>": the key still has path and GB id
            self._files[filename] = (source, comments(source.text))
        source, line_comments = self._files[filename]
        raw = source.line(line)
        return flagged_source(source.text, line_comments, line), len(raw) - len(raw.lstrip())


def baseline_text(targets: Mapping[str, Breaks]) -> str:
    """The JSON text of a baseline holding each target's breaks."""
    blocks = []
    for target in sorted(targets):
        breaks = targets[target]
        sites = [{**vars(key), "count": n} for key, n in sorted(breaks.sites.items())]
        recompiles = [{**vars(key), "count": n} for key, n in sorted(breaks.recompiles.items())]
        blocks.append(
            f"    {json.dumps(target)}: {{\n"
            f'      "sites": {_rows(sites)},\n'
            f'      "recompiles": {_rows(recompiles)}\n'
            "    }"
        )
    body = "{\n" + ",\n".join(blocks) + "\n  }" if blocks else "{}"
    return f'{{\n  "{FORMAT_KEY}": {FORMAT_VERSION},\n  "targets": {body}\n}}\n'


def _rows(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "[]"
    return "[\n" + ",\n".join(f"        {json.dumps(e, ensure_ascii=False)}" for e in entries) + "\n      ]"


def write_baseline(path: Path, targets: Mapping[str, Breaks]) -> None:
    write_file(path, baseline_text(targets), KIND)


def read_baseline(path: Path) -> dict[str, Breaks]:
    """Each stored target's breaks; :class:`BaselineError` names the file and what is wrong with it."""
    data = read_json_file(path, KIND, FORMAT_KEY, FORMAT_VERSION,
                          "write one with `graphmend-lint verify TARGET... --write-baseline FILE`")
    targets = data.get("targets")
    if not isinstance(targets, dict):
        raise BaselineError(f'{path}: {KIND} has no "targets" object')
    try:
        return {str(name): _breaks(entry) for name, entry in targets.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise BaselineError(
            f"{path}: malformed {KIND} entry ({error!r}); sites need party, path, gb_id, source "
            "and count, recompiles party, path, function and count"
        ) from error


def _breaks(entry: dict[str, Any]) -> Breaks:
    sites: Counter[SiteKey] = Counter()
    for row in entry["sites"]:
        sites[SiteKey(str(row["party"]), str(row["path"]), str(row["gb_id"]), str(row["source"]))] += int(row["count"])
    recompiles: Counter[RecompileKey] = Counter()
    for row in entry["recompiles"]:
        recompiles[RecompileKey(str(row["party"]), str(row["path"]), str(row["function"]))] += int(row["count"])
    return Breaks(sites, recompiles)

