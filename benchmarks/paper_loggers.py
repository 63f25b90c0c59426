"""The GraphMend paper's logger models: graph breaks before and after GM201-GM203's fixes.

The paper (arXiv 2509.16248) measured these Hugging Face models at
transformers 4.52.4, where each loses 2-3 graph breaks to one
``logger.warning_once`` (longformer also to ``.item()``). This script builds
each from its config class with small sizes and random weights (nothing is
downloaded; ``graphmend_lint.verify.hf``), measures it with
``graphmend_lint.verify.breaks`` (``explain`` plus the ``graph_breaks`` log),
then imports the model's transformers package again through the fixing import
hook (``graphmend_lint.verify.hook``, scope ``modules``, only GM201-GM203
selected, unsafe fixes on) and measures again. Each arm runs in its own
process, because the hook must see the modeling module's first import.

transformers 4.52.4 needs its own environment (5.x has dropped most of these
warnings)::

    python -m venv /tmp/tf452            # without --system-site-packages
    /tmp/tf452/bin/pip install torch==2.13.0 transformers==4.52.4 astroid libcst
    /tmp/tf452/bin/python benchmarks/paper_loggers.py

The table reports Dynamo's graph count, explain's break count (graphs - 1,
the paper's number), the distinct break sites that split a graph or skip a
frame, the sites Dynamo still logs without splitting (side effects left in an
epilogue), whether the eager outputs of both arms are identical, and which
rules' fixes the hook applied.
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
SELECT = ("GM201", "GM202", "GM203")


@dataclass(frozen=True)
class PaperModel:
    model_type: str
    model_class: str
    paper_breaks: int  # Table of the paper (v1), at transformers 4.52.4
    seq_len: int = 8


MODELS = (
    PaperModel("biogpt", "BioGptForCausalLM", 2),
    PaperModel("blenderbot", "BlenderbotForConditionalGeneration", 3),
    PaperModel("t5", "T5ForConditionalGeneration", 3),
    PaperModel("pegasus", "PegasusForCausalLM", 2),
    PaperModel("marian", "MarianMTModel", 3),
    # 13 tokens with a window of 4: the padding branch (and its warning) runs
    PaperModel("longformer", "LongformerModel", 5, seq_len=13),
)


# -- one arm (a subprocess) ----------------------------------------------------------------


def run_arm(model: PaperModel, fixed: bool, output: Path) -> dict[str, Any]:
    """Build, measure and run one model; save its eager output to *output*."""
    sys.path.insert(0, str(REPO))
    from graphmend_lint.config import Settings
    from graphmend_lint.verify.hook import LinterTransform, installed

    scope = [f"transformers.models.{model.model_type}"]
    transform = LinterTransform(Settings(scope="modules", select=SELECT), unsafe=True)
    if fixed:
        with installed(scope, transform):
            result = _measure(model, output)
    else:
        result = _measure(model, output)
    result["applied"] = sorted({code for codes in transform.applied.values() for code in codes})
    return result


def _measure(model: PaperModel, output: Path) -> dict[str, Any]:
    import torch
    import transformers

    from graphmend_lint.verify.breaks import capture_breaks
    from graphmend_lint.verify.hf import build_hf_workload
    from graphmend_lint.verify.targets import HfOptions

    torch.manual_seed(0)  # the same random weights in both arms
    workload = build_hf_workload(model.model_type, model.model_class, HfOptions(seq_len=model.seq_len))
    (args, kwargs) = workload.inputs[0]
    with torch.no_grad():
        eager = workload.callable(*args, **kwargs)
        report = capture_breaks(workload.callable, *args, **kwargs)
    tensor = eager.logits if getattr(eager, "logits", None) is not None else eager.last_hidden_state
    torch.save(tensor, output)
    modeling = os.path.realpath(sys.modules[type(workload.callable).__module__].__file__)
    splitting = {(s.filename, s.line, s.gb_id) for s in report.splitting_sites}

    def describe(site: Any) -> str:
        where = "modeling" if os.path.realpath(site.filename) == modeling else os.path.basename(site.filename)
        return f"{where}:{site.line} {site.gb_id}"

    return {
        "transformers": transformers.__version__,
        "graphs": report.graph_count,
        "explain_breaks": report.explain_break_count,
        "splitting": sorted(describe(s) for s in report.splitting_sites),
        "logged_only": sorted(describe(s) for s in report.sites if (s.filename, s.line, s.gb_id) not in splitting),
        "skipped_frames": list(report.skipped_frames),
    }


# -- the driver ------------------------------------------------------------------------------


def _arm_in_subprocess(model: PaperModel, fixed: bool, output: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--arm", "fixed" if fixed else "original", "--model", model.model_type,
               "--output", str(output)]  # fmt: skip
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    completed = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{model.model_type} {'fixed' if fixed else 'original'} arm failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def compare(models: tuple[PaperModel, ...]) -> list[dict[str, Any]]:
    import torch

    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for model in models:
            before_path, after_path = Path(directory, "before.pt"), Path(directory, "after.pt")
            before = _arm_in_subprocess(model, False, before_path)
            after = _arm_in_subprocess(model, True, after_path)
            same = torch.equal(torch.load(before_path), torch.load(after_path))
            rows.append({"model": model, "before": before, "after": after, "logits_equal": same})
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ("model", "paper", "graphs", "explain breaks", "splitting sites", "graphs", "explain breaks",
              "splitting sites", "logged, not splitting", "logits equal", "fixes")  # fmt: skip
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for row in rows:
        before, after, model = row["before"], row["after"], row["model"]
        cells = (
            model.model_class, str(model.paper_breaks),
            str(before["graphs"]), str(before["explain_breaks"]), "; ".join(before["splitting"]) or "-",
            str(after["graphs"]), str(after["explain_breaks"]), "; ".join(after["splitting"]) or "-",
            "; ".join(after["logged_only"]) or "-", "yes" if row["logits_equal"] else "NO",
            ", ".join(after["applied"]) or "-",
        )  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=("original", "fixed"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help="only this model type (default: all)")
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    models = tuple(m for m in MODELS if options.model in (None, m.model_type))
    if not models:
        parser.error(f"unknown model type {options.model!r}")
    if options.arm:
        print(json.dumps(run_arm(models[0], options.arm == "fixed", options.output)))
        return 0
    rows = compare(models)
    print(f"transformers {rows[0]['before']['transformers']}, torch Dynamo on this machine's CPU\n")
    print(format_table(rows))
    return 0 if all(row["logits_equal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
