"""Typing coverage on the corpus: of the names that hold a tensor when the program runs, how many does
the linter's value oracle prove a tensor, and of the bool tensors, how many does it prove a mask?

Recall on logged breaks counts a construct only where it breaks. Almost every missed break whose rule
exists is missed because a value was not proven a tensor (or a bool tensor), and those values are
everywhere in traced code, break or not. This measures that typing directly, against runtime truth:
each program of a split runs eagerly under ``sys.settrace``, which records the runtime type of every
local variable at every line of its functions; every read of a variable (``ast`` ``Load`` of a name)
in a function the linter treats as compiled is then classified statically. A read counts when every
observation at that line says "tensor" (or "bool tensor"); it is *covered* when the oracle agrees.

The misses are grouped by where the variable comes from (a parameter, a call's result, an attribute,
a subscript, a loop), which says which inference to widen. Per-name detail is printed for dev only::

    python benchmarks/typing_coverage.py --split dev --details
    python benchmarks/typing_coverage.py --split heldout      # aggregate numbers only
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from astroid import nodes

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from graphmend_lint.analysis.host_values import is_bool_tensor  # noqa: E402
from graphmend_lint.analysis.imports import ImportTable  # noqa: E402
from graphmend_lint.analysis.scope import analyze_scope  # noqa: E402
from graphmend_lint.config import Settings  # noqa: E402
from graphmend_lint.context import FileAnalysis  # noqa: E402
from graphmend_lint.pipeline import _file_analysis  # noqa: E402
from graphmend_lint.source import SourceFile  # noqa: E402
from tests.corpus.dynamo import load_program, seed_everything  # noqa: E402
from tests.corpus.layout import PROGRAMS_DIR  # noqa: E402

#: (function's first line, line, variable) -> runtime kinds seen: "bool", "tensor" or "other".
Observations = dict[tuple[int, int, str], set[str]]


def _runtime_kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "bool" if value.dtype == torch.bool else "tensor"
    return "other"


@contextlib.contextmanager
def _locals_traced(filename: str, seen: Observations) -> Iterator[None]:
    """Record the runtime kind of each local of *filename*'s frames before each line runs."""

    def local_trace(frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "line":
            first, line = frame.f_code.co_firstlineno, frame.f_lineno
            for name, value in frame.f_locals.items():
                seen.setdefault((first, line, name), set()).add(_runtime_kind(value))
        return local_trace

    def global_trace(frame: FrameType, event: str, _arg: Any) -> Any:
        return local_trace if event == "call" and frame.f_code.co_filename == filename else None

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        yield
    finally:
        sys.settrace(previous)


def observe(path: Path) -> Observations:
    """Run the program's callable eagerly on every input set, recording locals (exceptions included)."""
    seen: Observations = {}
    module, _ = load_program(path, f"typing_{path.stem}")
    seed_everything()
    fn, input_sets = module.make()
    for args in input_sets:
        seed_everything()
        with _locals_traced(str(path), seen), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            with contextlib.suppress(Exception):
                fn(*args)
    return seen


def analysis_of(path: Path) -> FileAnalysis:
    """The linter's analysis of the program, default settings (``--scope compiled``)."""
    text = path.read_text()
    tree = ast.parse(text)
    imports = ImportTable.from_tree(tree, path.stem)
    scope = analyze_scope(tree, imports, str(path))
    return _file_analysis(tree, SourceFile(text), str(path), path.stem, False, imports, scope, Settings())


def origin(read: nodes.Name) -> str:
    """Where the variable *read* comes from, in words that name an inference to widen."""
    try:
        bindings = read.lookup(read.name)[1]
    except Exception:
        return "unresolved"
    kinds = set()
    for binding in bindings:
        parent = binding.parent
        if isinstance(parent, nodes.Arguments):
            kinds.add("parameter")
        elif isinstance(parent, (nodes.For, nodes.Comprehension)) or isinstance(parent, (nodes.Tuple, nodes.List)) \
                and isinstance(parent.parent, (nodes.For, nodes.Comprehension)):
            kinds.add("loop variable")
        elif isinstance(parent, (nodes.Tuple, nodes.List)):
            kinds.add("unpacked")
        elif isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)) and parent.value is not None:
            value = parent.value
            kinds.add(f"assigned {type(value).__name__}" + (
                f" {value.func.as_string()}" if isinstance(value, nodes.Call) and len(value.func.as_string()) < 40 else ""
            ))
        else:
            kinds.add(type(parent).__name__)
    return " | ".join(sorted(kinds)) or "no binding"


@dataclass
class Coverage:
    """Reads of runtime tensors (and bool tensors), and how many the oracle proves."""

    tensors: int = 0
    tensors_proven: int = 0
    masks: int = 0
    masks_proven: int = 0
    tensor_misses: Counter[str] = field(default_factory=Counter)
    mask_misses: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)

    def add(self, other: Coverage) -> None:
        self.tensors += other.tensors
        self.tensors_proven += other.tensors_proven
        self.masks += other.masks
        self.masks_proven += other.masks_proven
        self.tensor_misses += other.tensor_misses
        self.mask_misses += other.mask_misses
        self.details += other.details


def coverage_of(path: Path) -> Coverage:
    seen = observe(path)
    analysis = analysis_of(path)
    result = Coverage()
    for function, _ in analysis.traced_functions():
        first = function.decorators.lineno if function.decorators else function.lineno
        code_first = min((key[0] for key in seen if key[0] in (first, function.lineno)), default=None)
        if code_first is None:
            continue
        for read in function.nodes_of_class(nodes.Name):
            if read.scope() is not function:
                continue
            kinds = seen.get((code_first, read.lineno, read.name))
            if not kinds or "other" in kinds:
                continue
            where = origin(read)
            proven = analysis.values.is_tensor(read)
            result.tensors += 1
            result.tensors_proven += proven
            if not proven:
                result.tensor_misses[where] += 1
                result.details.append(f"{path.stem}:{read.lineno} {read.name} tensor ({where})")
            if kinds == {"bool"}:
                mask = is_bool_tensor(analysis.values, read)
                result.masks += 1
                result.masks_proven += mask
                if not mask:
                    result.mask_misses[where] += 1
                    result.details.append(f"{path.stem}:{read.lineno} {read.name} bool ({where})")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout"), default="dev")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--details", action="store_true", help="every unproven read (dev only)")
    args = parser.parse_args(argv)
    if args.details and args.split == "heldout":
        parser.error("--details lists program lines: dev only")
    total = Coverage()
    failed = 0
    for path in sorted((PROGRAMS_DIR / args.split).glob("*.py")):
        if args.only and not any(part in path.stem for part in args.only):
            continue
        try:
            total.add(coverage_of(path))
        except Exception as error:  # a program that cannot run eagerly here is left out, and counted
            failed += 1
            print(f"skipped {path.stem if args.split == 'dev' else '(held-out program)'}: {type(error).__name__}",
                  file=sys.stderr)
    print(f"{args.split}: tensor reads proven {total.tensors_proven}/{total.tensors} "
          f"({total.tensors_proven / max(total.tensors, 1):.2f}); bool-tensor reads proven masks "
          f"{total.masks_proven}/{total.masks} ({total.masks_proven / max(total.masks, 1):.2f}); "
          f"{failed} programs not measured")
    for title, misses in (("unproven tensors by origin", total.tensor_misses), ("unproven masks by origin", total.mask_misses)):
        print(f"\n{title}:")
        for where, count in misses.most_common(25):
            print(f"  {count:5d}  {where}")
    if args.details:
        print("\n" + "\n".join(total.details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
