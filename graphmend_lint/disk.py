"""Reading a user's file, and writing a fix back the way their filesystem expects.

Reading refuses what is not Python source (too large, binary, undecodable)
with a message that names the file. Writing follows the file, not the path:

* a **read-only** file (no write permission for this user, or no write bit
  at all, which even root's shell respects by convention) is reported and
  left untouched: ``--fix`` must not do what ``echo >> file`` would refuse;
* a **symlink** stays a symlink: its target is fixed;
* a file with **hard links** is rewritten in place, so every link keeps
  sharing one content (a rename would give the fixed path a new inode and
  leave the other links with the old text);
* any other file is written **atomically**: a temp file in the same folder,
  flushed and synced, with the original's mode (and owner, where allowed),
  renamed over the original. A crash or Ctrl-C leaves either the old or the
  new text, never half of each.

In-place writes cannot be atomic; they are used only where atomicity would
break the hard link, which is the user's explicit choice of file layout
(see ``docs/getting-started.md``).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from graphmend_lint.source import DecodeError, SourceFile

MIB = 1024 * 1024


class ReadFailure(Exception):
    """A file that cannot be linted; ``skip`` marks a deliberate skip (a note) rather than an error."""

    def __init__(self, message: str, skip: bool = False) -> None:
        super().__init__(message)
        self.skip = skip


class WriteRefused(Exception):
    """A fix was not written; the message names the file and why."""


def size_text(size: int) -> str:
    """``4 MiB``, ``512 KiB`` or ``100 bytes``: how a limit reads in a message."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"


def read_source(path: Path, max_size: int = 0) -> tuple[bytes, SourceFile]:
    """The file's bytes and decoded text; ``max_size`` bytes at most (0: no limit)."""
    try:
        size = path.stat().st_size
        if max_size and size > max_size:
            raise ReadFailure(
                f"{path}: skipped, {size_text(size)} is over the {size_text(max_size)} `max-file-size`", skip=True
            )
        data = path.read_bytes()
    except OSError as error:
        raise ReadFailure(f"{path}: cannot read: {error.strerror or error}") from error
    if b"\0" in data:
        raise ReadFailure(f"{path}: skipped, looks binary (contains NUL bytes)", skip=True)
    try:
        return data, SourceFile.from_bytes(data)
    except DecodeError as error:
        raise ReadFailure(f"{path}: cannot decode: {error}") from error


def is_read_only(path: Path, status: os.stat_result) -> bool:
    """No write access for this process, or no write permission bit for anyone."""
    return not os.access(path, os.W_OK) or not status.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def write_fix(path: Path, data: bytes, what: str = "fix") -> None:
    """Write a fixed file back: the symlink's target, in place for hard links, else atomically.

    Raises :class:`WriteRefused` for a read-only file and ``OSError`` when the
    write itself fails; *what* names the change in the message ("fix", "noqa").
    """
    target = Path(os.path.realpath(path))
    status = target.stat()
    if is_read_only(target, status):
        raise WriteRefused(f"{path}: read-only ({stat.filemode(status.st_mode)}); {what} not written")
    if status.st_nlink > 1:
        write_in_place(target, data)
    else:
        write_atomically(target, data)


def write_in_place(path: Path, data: bytes) -> None:
    """Overwrite *path*'s content without replacing its inode (hard links keep sharing it)."""
    with path.open("r+b") as stream:
        stream.write(data)
        stream.truncate()
        stream.flush()
        os.fsync(stream.fileno())


def write_atomically(path: Path, data: bytes) -> None:
    """Replace *path* with *data* via a synced temp file and a rename, keeping mode and owner."""
    status = path.stat()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
        _keep_owner(temporary, status)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _keep_owner(temporary: str, status: os.stat_result) -> None:
    """Give the new file the old one's owner where this process may (root, or the same owner)."""
    if hasattr(os, "chown") and (os.stat(temporary).st_uid, os.stat(temporary).st_gid) != (status.st_uid, status.st_gid):
        try:
            os.chown(temporary, status.st_uid, status.st_gid)
        except PermissionError:
            pass  # an unprivileged user cannot give files away; the file is theirs anyway
