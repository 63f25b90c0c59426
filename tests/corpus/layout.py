"""Where programs live, which split each belongs to, and what a program file must declare.

The split is a function of the file name only, so it is fixed before anything
is measured and cannot drift toward what the linter handles.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"
SPLITS = ("dev", "heldout")
#: Name prefixes and the source each stands for (README.md).
SOURCES = {
    "hf": "huggingface/transformers",
    "timm": "huggingface/pytorch-image-models",
    "diffusers": "huggingface/diffusers",
    "tv": "pytorch/vision",
    "ta": "pytorch/audio",
    "issue": "public bug report",
    "census": "oss-model-graph-break-corpus",
    "zoo": "other public model repositories (segment-anything/sam2, open_clip, detectron2, llama, whisper, ...)",
}
NAME_PATTERN = re.compile(r"^(?P<source>[a-z]+)_[a-z0-9]+(_[a-z0-9]+)+$")
SOURCE_LINE = re.compile(r"^Source: \S+", re.MULTILINE)


def split_of(stem: str) -> str:
    """The split a program named ``stem`` belongs to: a third held out, by hash."""
    return "heldout" if int(hashlib.sha256(stem.encode()).hexdigest(), 16) % 3 == 0 else "dev"


def in_gate_sample(stem: str) -> bool:
    """Whether the test suite's corpus gate measures the program named ``stem``: half of each split, by hash.

    Measuring all 1882 programs took 59 minutes on 2 cores (2026-12-02), which with the rest of CI does not
    fit its 90 minutes. Like the split, the half is fixed by the name alone (a salted hash, independent of
    the split's), so it cannot drift toward what the linter handles; the full corpus is measured with
    ``python -m tests.corpus.run --mode fix`` for the numbers docs/corpus.md reports.
    """
    return int(hashlib.sha256(f"gate:{stem}".encode()).hexdigest(), 16) % 2 == 0


@dataclass(frozen=True)
class Program:
    """One corpus program on disk."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def digest(self) -> str:
        """The SHA-256 of the file's bytes: a measurement is reused only for the very text it measured."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    @property
    def split(self) -> str:
        """The directory it sits in (which a test compares with :func:`split_of`)."""
        return self.path.parent.name

    @property
    def source(self) -> str:
        """The name prefix (``hf``, ``timm``, ...), or ``?`` for a malformed name."""
        match = NAME_PATTERN.match(self.name)
        return match["source"] if match else "?"


def discover(split: str = "all", only: tuple[str, ...] = (), gate_sample: bool = False) -> list[Program]:
    """Programs of one split (or ``all``), sorted by name; ``only`` keeps names containing any substring,
    ``gate_sample`` those :func:`in_gate_sample` keeps."""
    splits = SPLITS if split == "all" else (split,)
    programs = [
        Program(path)
        for name in splits
        for path in sorted((PROGRAMS_DIR / name).glob("*.py"))
        if (not only or any(part in path.stem for part in only)) and (not gate_sample or in_gate_sample(path.stem))
    ]
    return sorted(programs, key=lambda p: p.name)


def format_problems(program: Program) -> list[str]:
    """What is wrong with a program file's form (not its behaviour): name, split, docstring, make()."""
    problems = []
    if program.source not in SOURCES:
        problems.append(f"name does not look like <source>_<topic>_<construct> with a known source: {program.name}")
    if program.split != split_of(program.name):
        problems.append(f"sits in {program.split}/ but its name hashes to {split_of(program.name)}/")
    tree = ast.parse(program.path.read_text(encoding="utf-8"), str(program.path))
    docstring = ast.get_docstring(tree) or ""
    if not SOURCE_LINE.search(docstring):
        problems.append("module docstring has no 'Source: ...' line")
    if not any(isinstance(node, ast.FunctionDef) and node.name == "make" for node in tree.body):
        problems.append("defines no top-level make()")
    return problems
