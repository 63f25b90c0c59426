"""Longformer's real Dynamo graph breaks, before and after graphmend-lint's fixes.

Usage::

    python benchmarks/longformer_breaks.py [--python /tmp/tf452/bin/python] [--json out.json]

The model is ``LongformerModel`` built from a small ``LongformerConfig``
(hidden 32, 2 layers, 4 heads, ``attention_window=4``) with random weights,
called on ``input_ids`` of shape (1, 13) twice: without global attention (the
default) and with global attention on the first token (what question answering
and classification heads set up), so that both sides of
``if is_global_attn:`` run.

Three arms, each in a fresh interpreter (``--python`` picks which one, e.g. a
venv with another transformers; it needs only torch, transformers and this
repository on ``PYTHONPATH``, not the linter's own dependencies):

* ``original``: the installed ``modeling_longformer.py``;
* ``GM3xx/GM4xx``: the file with every fix of the host-sync rules (GM301-GM403)
  applied in memory, unsafe fixes included;
* ``all rules``: with every rule's fixes, unsafe included.

The linter runs here, in this interpreter, with ``scope = "modules"`` (every
``forward`` is a compile entry point, as ``graphmend-lint verify`` does for
Hugging Face models); the arms receive the fixed text and compile it under the
original filename through :mod:`graphmend_lint.verify.hook`, so nothing on
disk changes. Each arm reports Dynamo's graphs and distinct break sites
(:mod:`graphmend_lint.verify.breaks`) and the outputs, which are compared with
the original arm's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODEL_MODULE = "transformers.models.longformer.modeling_longformer"
SEQ_LEN = 13
ATOL = 1e-5
ARMS: dict[str, tuple[str, ...] | None] = {
    "original": None,
    "GM3xx/GM4xx": ("GM3", "GM4"),
    "all rules": ("ALL",),
}
INPUT_SETS = ("no global attention", "global attention on token 0")


# -- arm side (runs in the chosen interpreter; torch and transformers only) ----------------


def _build_model() -> tuple[Any, list[dict[str, Any]]]:
    """The small random LongformerModel and its two input sets."""
    import torch
    from transformers import LongformerConfig, LongformerModel

    torch.manual_seed(0)
    config = LongformerConfig(
        vocab_size=256,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        attention_window=4,
        max_position_embeddings=64,
    )
    model = LongformerModel(config).eval()
    input_ids = torch.randint(3, 256, (1, SEQ_LEN), generator=torch.Generator().manual_seed(0))
    attention_mask = torch.ones(1, SEQ_LEN, dtype=torch.long)
    global_first = torch.zeros(1, SEQ_LEN, dtype=torch.long)
    global_first[0, 0] = 1
    return model, [
        {"input_ids": input_ids, "attention_mask": attention_mask},
        {"input_ids": input_ids, "attention_mask": attention_mask, "global_attention_mask": global_first},
    ]


def run_arm(texts_path: str | None, out_path: str) -> None:
    """Measure one arm and write its JSON report to *out_path*."""
    import contextlib

    import torch

    from graphmend_lint.verify.breaks import capture_breaks
    from graphmend_lint.verify.hook import ReplaceTransform, installed

    texts = json.loads(Path(texts_path).read_text()) if texts_path else {}
    hook = installed([MODEL_MODULE], ReplaceTransform(texts)) if texts else contextlib.nullcontext()
    with hook, torch.no_grad():
        model, input_sets = _build_model()
        runs = []
        for kwargs in input_sets:
            eager = model(**kwargs).last_hidden_state
            report = capture_breaks(model, **kwargs)
            compiled = torch.compile(model, backend="eager")(**kwargs).last_hidden_state
            runs.append(
                {
                    "graphs": report.graph_count,
                    "explain_breaks": report.explain_break_count,
                    "sites": [[s.filename, s.line, s.gb_id, s.reason] for s in report.sites],
                    "skipped_frames": list(report.skipped_frames),
                    "eager": eager.tolist(),
                    "compiled_vs_eager": float((compiled - eager).abs().max()),
                }
            )
    import transformers

    Path(out_path).write_text(json.dumps({"transformers": transformers.__version__, "runs": runs}))


# -- driver side (runs the linter) ---------------------------------------------------------


@dataclass(frozen=True)
class ArmResult:
    name: str
    applied: tuple[str, ...]
    report: dict[str, Any]


def _arm_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def model_file(python: str) -> str:
    """Where the arm interpreter's transformers keeps modeling_longformer.py."""
    code = f"import importlib.util; print(importlib.util.find_spec({MODEL_MODULE!r}).origin)"
    completed = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True, env=_arm_env())
    return completed.stdout.strip()


def fixed_text(path: str, select: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The file as ``graphmend-lint --fix --unsafe-fixes --scope modules --select ...`` would write it."""
    from graphmend_lint.config import Settings
    from graphmend_lint.verify.static import fix_text

    result = fix_text(Path(path).read_text(encoding="utf-8"), path, Settings(select=select, scope="modules"), True)
    return result.source, tuple(d.code for d in result.applied)


def measure(python: str, name: str, select: tuple[str, ...] | None, path: str) -> ArmResult:
    with tempfile.TemporaryDirectory() as tmp:
        texts_arg: list[str] = []
        applied: tuple[str, ...] = ()
        if select is not None:
            text, applied = fixed_text(path, select)
            texts_file = Path(tmp, "texts.json")
            texts_file.write_text(json.dumps({os.path.realpath(path): text}))
            texts_arg = ["--texts", str(texts_file)]
        out = Path(tmp, "report.json")
        command = [python, __file__, "--arm", *texts_arg, "--out", str(out)]
        completed = subprocess.run(command, capture_output=True, text=True, env=_arm_env(), check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"arm {name!r} failed:\n{completed.stderr[-4000:]}")
        return ArmResult(name, applied, json.loads(out.read_text()))


def _max_difference(a: Any, b: Any) -> float:
    if isinstance(a, list):
        return max((_max_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    return abs(a - b)


def render(results: list[ArmResult], path: str) -> str:
    original = results[0].report["runs"]
    lines = [f"transformers {results[0].report['transformers']}, {path}", ""]
    for index, label in enumerate(INPUT_SETS):
        lines.append(f"## {label}")
        lines.append(
            "| arm | fixes applied | graphs | explain breaks | distinct break sites "
            "| max abs(out - original) | compiled vs eager |"
        )
        lines.append("|---|---|---|---|---|---|---|")
        for result in results:
            run = result.report["runs"][index]
            sites = ", ".join(f"{Path(f).name}:{line} {gb}" for f, line, gb, _ in run["sites"]) or "none"
            skipped = f" (+{len(run['skipped_frames'])} frames run eagerly)" if run["skipped_frames"] else ""
            applied = ", ".join(f"{c}x{result.applied.count(c)}" for c in sorted(set(result.applied))) or "-"
            difference = _max_difference(run["eager"], original[index]["eager"])
            lines.append(
                f"| {result.name} | {applied} | {run['graphs']} | {run['explain_breaks']} "
                f"| {len(run['sites'])}: {sites}{skipped} "
                f"| {difference:.2e} | {run['compiled_vs_eager']:.2e} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter whose torch/transformers to measure")
    parser.add_argument("--json", help="also write every arm's raw report here")
    parser.add_argument("--arm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.arm:
        run_arm(args.texts, args.out)
        return 0
    path = model_file(args.python)
    results = [measure(args.python, name, select, path) for name, select in ARMS.items()]
    print(render(results, path))
    for result in results[1:]:
        for index, run in enumerate(result.report["runs"]):
            if _max_difference(run["eager"], results[0].report["runs"][index]["eager"]) > ATOL:
                print(f"OUTPUTS DIFFER: {result.name}, {INPUT_SETS[index]}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
