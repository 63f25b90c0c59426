"""Whose code a graph break is in: the project's own (first-party) or an installed package's (third-party).

A CI gate is only actionable on first-party sites: a new break inside
``transformers`` is news (a version bump), not a line to fix in the pull
request. Paths are made relative to where they are stable across machines:
the project root for first-party files, the ``site-packages`` folder for
installed packages, so a baseline written on a laptop matches a CI runner.

``site-packages`` is checked before the project root on purpose: a virtual
environment inside the project (``.venv/``) still holds third-party code.
"""

from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass
from pathlib import PurePath

FIRST_PARTY, THIRD_PARTY = "first-party", "third-party"
_PACKAGE_FOLDERS = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class Origin:
    """Where a file belongs: ``party``, the stable ``path`` and, for third-party code, its ``package``."""

    party: str
    path: str  # forward slashes; relative to the project root or the package folder
    package: str | None = None


def attribute(filename: str, root: str) -> Origin:
    """The origin of ``filename`` (an absolute path Dynamo logged) for a project rooted at ``root``."""
    path = os.path.abspath(filename)
    parts = PurePath(path).parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in _PACKAGE_FOLDERS and index + 1 < len(parts):
            inside = parts[index + 1 :]
            return Origin(THIRD_PARTY, "/".join(inside), inside[0].removesuffix(".py"))
    if _is_under(path, root):
        return Origin(FIRST_PARTY, _relative(path, root))
    stdlib = sysconfig.get_paths()["stdlib"]
    if _is_under(path, stdlib):
        return Origin(THIRD_PARTY, _relative(path, stdlib), "stdlib")
    return Origin(THIRD_PARTY, path.replace(os.sep, "/"))


def _is_under(path: str, folder: str) -> bool:
    folder = os.path.abspath(folder)
    return os.path.commonpath([path, folder]) == folder


def _relative(path: str, folder: str) -> str:
    return os.path.relpath(path, os.path.abspath(folder)).replace(os.sep, "/")
