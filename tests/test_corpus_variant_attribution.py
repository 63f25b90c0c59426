"""A break logged under a same-named copy of the program measured earlier in the worker is the program's own.

The ``--fix`` and ``--fix --unsafe-fixes`` variants of a program are files of
the same name in other folders, measured one after the other in one worker.
A Dynamo cache keyed by code objects (which compare equal when only
``co_filename`` differs) can log a break of the second under the first's path;
counted as a break in another file, it once failed
``test_fixes_never_move_breaks_into_other_files`` for LightGlue, whose unsafe
variant logs that line in its own file when measured alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

pytest.importorskip("torch")
from tests.corpus.dynamo import _is_program_file  # noqa: E402

TARGET = "/tmp/corpus-fix-x/unsafe/hf_lightglue_early_stop_keypoint_pruning.py"


def test_the_program_itself() -> None:
    assert _is_program_file(TARGET, TARGET)


def test_a_copy_in_another_variant_folder_is_the_program() -> None:
    assert _is_program_file("/tmp/corpus-fix-x/safe/hf_lightglue_early_stop_keypoint_pruning.py", TARGET)


def test_library_code_is_another_file() -> None:
    assert not _is_program_file("/usr/lib/python3.11/copy.py", TARGET)
    assert not _is_program_file("/tmp/corpus-fix-x/unsafe/helpers.py", TARGET)
