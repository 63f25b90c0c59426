"""``--fix`` respects the filesystem: read-only files, symlinks, hard links; the size limit is a setting."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import CLEAN_PROGRAM, GUARDED_PRINT, PRINT_PROGRAM, run_cli, write

FIXED_MARK = GUARDED_PRINT  # what GM201's fix writes into PRINT_PROGRAM


def fix(project: Path, *paths: str) -> object:
    return run_cli("--fix", "--unsafe-fixes", "--no-cache", *paths, cwd=project)


def test_read_only_file_is_reported_and_left_untouched(project: Path) -> None:
    path = write(project, "ro.py", PRINT_PROGRAM)
    other = write(project, "rw.py", PRINT_PROGRAM)
    path.chmod(0o444)
    before = path.read_bytes()
    result = fix(project, "ro.py", "rw.py")
    assert path.read_bytes() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert FIXED_MARK in other.read_text()  # the writable one is still fixed
    assert "ro.py: read-only (-r--r--r--); fix not written" in result.err
    assert "ro.py:7:5: GM201" in result.out  # its finding is still there, unfixed
    assert "1 file was not fixed (see the errors above)." in result.out
    assert "All checks passed" not in result.out
    assert result.code == 1


def test_symlink_stays_a_link_and_its_target_is_fixed(project: Path) -> None:
    target = write(project, "real/model.py", PRINT_PROGRAM)
    link = project / "model.py"
    link.symlink_to(Path("real/model.py"))
    result = fix(project, "model.py")
    assert result.code == 0, result.out + result.err
    assert link.is_symlink() and os.readlink(link) == "real/model.py"
    assert FIXED_MARK in target.read_text()


def test_link_and_target_linted_together_are_fixed_once(project: Path) -> None:
    target = write(project, "model.py", PRINT_PROGRAM)
    (project / "alias.py").symlink_to("model.py")
    result = fix(project, ".")
    assert result.code == 0, result.out + result.err
    assert "changed on disk" not in result.err and target.read_text().count(FIXED_MARK) == 1


def test_hard_links_keep_sharing_one_content(project: Path) -> None:
    first = write(project, "a.py", PRINT_PROGRAM)
    second = project / "b_same_inode.py"
    os.link(first, second)
    result = fix(project, "a.py")
    assert result.code == 0, result.out + result.err
    assert first.stat().st_nlink == 2 and first.stat().st_ino == second.stat().st_ino
    assert FIXED_MARK in second.read_text()


def test_plain_files_are_still_replaced_atomically(project: Path) -> None:
    path = write(project, "a.py", PRINT_PROGRAM)
    inode = path.stat().st_ino
    assert fix(project, "a.py").code == 0
    assert path.stat().st_ino != inode  # a new file renamed over the old one
    assert not [p for p in project.iterdir() if p.name.endswith(".tmp")]


def test_size_limit_is_a_setting_and_skips_are_in_the_summary(project: Path) -> None:
    big = write(project, "big.py", PRINT_PROGRAM + "# padding\n" * 200)
    write(project, "small.py", CLEAN_PROGRAM)
    (project / "pyproject.toml").write_text("[tool.graphmend-lint]\nmax-file-size = 1024\n")
    result = run_cli(".", "--no-cache", cwd=project)
    size = big.stat().st_size
    assert f"big.py: skipped, {size} bytes is over the 1 KiB `max-file-size`" in result.err
    assert result.out.splitlines()[-1] == "1 file skipped (see the notes above)."
    assert result.code == 0
    (project / "pyproject.toml").write_text("[tool.graphmend-lint]\nmax-file-size = 0\n")
    unlimited = run_cli(".", "--no-cache", cwd=project)
    assert "big.py:7:5: GM201" in unlimited.out and "skipped" not in unlimited.out + unlimited.err


@pytest.mark.parametrize("value", ["-1", '"4MB"', "true"])
def test_size_limit_must_be_a_byte_count(project: Path, value: str) -> None:
    (project / "pyproject.toml").write_text(f"[tool.graphmend-lint]\nmax-file-size = {value}\n")
    write(project, "a.py", CLEAN_PROGRAM)
    result = run_cli("a.py", cwd=project)
    assert result.code == 2 and "`max-file-size`: expected a whole number of bytes (0 for no limit)" in result.err
