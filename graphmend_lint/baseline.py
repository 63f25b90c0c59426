"""Baseline files: accept today's findings, and fail CI only on new ones.

``--write-baseline FILE`` stores every current finding; ``--baseline FILE``
then reports (and counts for the exit code) only findings not stored there.

The file is JSON, one finding a line, sorted, so that rewriting it after
unrelated edits shows no diff in review and a new finding shows as one line::

    {
      "graphmend-lint-baseline": 1,
      "findings": [
        {"path": "src/model.py", "code": "GM201", "source": "print(\\"y:\\", y.data)", "occurrence": 0}
      ]
    }

A finding's key is ``(path, code, source, occurrence)``, never its line:

* ``path``: the file relative to the project root (the folder of the config
  file, else the working directory), with ``/``, so the baseline works from any
  working directory and on any OS;
* ``source``: the text of the finding's first line without its comment, blanks
  collapsed. Inserting or deleting lines elsewhere, re-indenting, or adding a
  comment (a ``# noqa`` too) keeps the key; editing the flagged line makes the
  finding new, which is the point;
* ``occurrence``: the finding's index among the file's findings with the same
  code and source, in line order, so two identical ``print(x)`` lines are two
  keys. Deleting one of several identical lines and adding another elsewhere
  in the file keeps the count, so that new one passes: the price of ignoring
  line numbers.

The rule's message is not part of the key: rewording a message in a new
release must not turn a whole baseline into new findings. Syntax errors are
never stored: a file that does not parse is broken, not existing debt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.engine import FileReport, RunReport
from graphmend_lint.noqa import comments
from graphmend_lint.pipeline import SYNTAX_ERROR_CODE
from graphmend_lint.source import SourceFile

FORMAT_KEY = "graphmend-lint-baseline"
FORMAT_VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be read or is not a baseline; the message names the file."""


@dataclass(frozen=True, order=True)
class Key:
    """What identifies a finding across edits that move it (see the module docstring)."""

    path: str
    code: str
    source: str
    occurrence: int


def _project_path(path: str, root: str) -> str:
    """*path* relative to the project *root*, with forward slashes."""
    return os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")


def flagged_source(text: str, line_comments: Mapping[int, tuple[int, str]], line: int) -> str:
    """Line *line* of *text* without its comment, with blanks collapsed."""
    code = SourceFile(text).line(line)
    comment = line_comments.get(line)
    if comment is not None:
        code = code[: comment[0]]
    return " ".join(code.split())


#: Where a finding's line is read: a file's text (cell ``None``), or one notebook cell's.
TextKey = tuple[str, "int | None"]


def texts_of(file: FileReport) -> dict[TextKey, str]:
    """The texts *file*'s findings are positioned in: the fixed text after ``--fix``, else the linted one.

    A notebook's findings count lines within their cell, so its cells are the texts (the cell
    number itself stays out of the key: inserting a cell must not make old findings new).
    """
    if file.cell_sources:
        return {(file.path, number): text for number, text in file.cell_sources.items()}
    text = file.fixed_source if file.fixed_source is not None else file.source
    return {} if text is None else {(file.path, None): text}


def keyed(
    diagnostics: Iterable[Diagnostic], texts: Mapping[TextKey, str], root: str
) -> list[tuple[Diagnostic, Key]]:
    """Each finding with its key, in line order; *texts* holds the text each was found in (:func:`texts_of`)."""
    found: list[tuple[Diagnostic, Key]] = []
    seen: dict[tuple[str, str, str], int] = {}
    line_comments: dict[TextKey, dict[int, tuple[int, str]]] = {}
    for diagnostic in sorted(diagnostics, key=lambda d: d.sort_key):
        where = (diagnostic.path, diagnostic.cell)
        text = texts.get(where, "")
        if where not in line_comments:
            line_comments[where] = comments(text)
        source = flagged_source(text, line_comments[where], diagnostic.start.line)
        identity = (_project_path(diagnostic.path, root), diagnostic.code, source)
        occurrence = seen.get(identity, 0)
        seen[identity] = occurrence + 1
        found.append((diagnostic, Key(*identity, occurrence)))
    return found


def _stored(found: Iterable[Key]) -> list[Key]:
    """What a baseline keeps of *found*: every key once, sorted, syntax errors left out."""
    return sorted({key for key in found if key.code != SYNTAX_ERROR_CODE})


def baseline_text(found: Iterable[Key]) -> str:
    """The JSON text of a baseline holding *found*."""
    rows = [f"    {json.dumps(vars(key), ensure_ascii=False)}" for key in _stored(found)]
    findings = "[\n" + ",\n".join(rows) + "\n  ]" if rows else "[]"
    return f'{{\n  "{FORMAT_KEY}": {FORMAT_VERSION},\n  "findings": {findings}\n}}\n'


def write_baseline(path: Path, found: Iterable[Key]) -> int:
    """Write the baseline file; returns how many findings it holds."""
    stored = _stored(found)
    write_file(path, baseline_text(stored), "baseline")
    return len(stored)


def write_file(path: Path, text: str, kind: str) -> None:
    """Write a baseline file of *kind* (``baseline``, ``break baseline``); :class:`BaselineError` if it fails."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"{path}: cannot write {kind}: {error.strerror or error}") from error


def read_json_file(path: Path, kind: str, format_key: str, version: int, hint: str) -> dict[str, Any]:
    """A baseline file's JSON object, once its format marker is checked.

    Shared by the lint baseline and verify's break baseline so that both name
    the file, and say what is wrong with it, in the same words; *hint* says
    how to write a good one.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BaselineError(f"{path}: cannot read {kind}: {error.strerror or error}") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"{path}: {kind} is not valid JSON: {error}") from error
    if not isinstance(data, dict) or data.get(format_key) != version:
        raise BaselineError(f"{path}: not a graphmend-lint {kind} (expected \"{format_key}\": {version}); {hint}")
    return data


def read_baseline(path: Path) -> frozenset[Key]:
    """The keys stored in a baseline file; :class:`BaselineError` names the file and what is wrong."""
    data = read_json_file(path, "baseline", FORMAT_KEY, FORMAT_VERSION, "write one with --write-baseline")
    entries = data.get("findings")
    if not isinstance(entries, list):
        raise BaselineError(f"{path}: baseline has no \"findings\" list")
    stored: set[Key] = set()
    for index, entry in enumerate(entries):
        try:
            stored.add(Key(str(entry["path"]), str(entry["code"]), str(entry["source"]), int(entry["occurrence"])))
        except (KeyError, TypeError, ValueError) as error:
            raise BaselineError(
                f"{path}: baseline finding {index} needs path, code, source and occurrence ({error!r})"
            ) from error
    return frozenset(stored)


def new_findings(
    diagnostics: Iterable[Diagnostic], texts: Mapping[TextKey, str], root: str, stored: frozenset[Key]
) -> list[Diagnostic]:
    """The findings whose key is not in the baseline, in line order."""
    return [diagnostic for diagnostic, key in keyed(diagnostics, texts, root) if key not in stored]


def drop_baselined(result: RunReport, stored: frozenset[Key], root: str) -> int:
    """Remove the findings *stored* in a baseline from *result*; returns how many were removed.

    Keys are computed on the text the findings belong to: the fixed text
    after ``--fix``, else the text that was linted.
    """
    dropped = 0
    for file in result.files:
        if not file.diagnostics:
            continue
        kept = new_findings(file.diagnostics, texts_of(file), root, stored)
        dropped += len(file.diagnostics) - len(kept)
        file.diagnostics = kept
    return dropped
