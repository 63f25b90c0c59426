"""The GraphMend paper's table (issue 9 §2), measured with ``graphmend-lint verify`` in two environments.

The paper (arXiv 2509.16248, v1) measured Hugging Face models at
transformers 4.52.4. This script runs ``graphmend-lint verify hf:<type>:<Class>
--unsafe-fixes --bench`` for each of its models that can be built offline
(tiny config, random weights; nothing is downloaded), plus marian as an
extra, in

* ``4.52.4``: a separate venv holding the paper's transformers release, made
  by ``--create-venv`` or by hand with the one command::

      python -m venv /tmp/tf452 && /tmp/tf452/bin/pip install torch==2.13.0 transformers==4.52.4 astroid libcst

* ``current``: the interpreter running this script (the installed release).

Columns: the break sites Dynamo logs (the headline: a break counts until
Dynamo stops logging it), whether ``torch.compile(fullgraph=True)`` runs,
Dynamo's graphs, breaks as the paper counts them (``explain``'s,
graphs - 1), distinct splitting break sites (verify's ``breaks``), the
paper's breaks before and after, whether outputs stayed equal, cold start and
steady-state latency of the compiled model before and after the fixes, the
fixes applied, and whether the paper's result is matched. Every number comes
from verify's ``--json``; nothing is measured here. Examples::

    python benchmarks/paper_table.py --create-venv                    # both environments, CPU or GPU
    python benchmarks/paper_table.py --env current --only longformer,phi3 --no-bench
    python benchmarks/paper_table.py --device cuda --mode reduce-overhead --json paper_table.json
    python benchmarks/paper_table.py --env 4.52.4 --create-venv --no-bench --no-resume --check   # CI's gate

Each model's verify run is cached under ``--cache-dir`` (keyed by transformers
version and model; reused only for the same command), so an interrupted run
resumes; ``--no-resume`` measures everything again.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verify_runs import (
    VerifyRun,
    arm_counts,
    cached_verify,
    fixes_applied,
    interpreter_versions,
    markdown_table,
    progress,
    site_recall,
    yes_no,
)

PAPER_TRANSFORMERS = "4.52.4"
DEFAULT_VENV = Path("/tmp/tf452")
VENV_PACKAGES = ("torch==2.13.0", f"transformers=={PAPER_TRANSFORMERS}", "astroid", "libcst")
#: Phi-3 with LongRoPE: 8 tokens > original_max_position_embeddings=4, so the long factors are selected
#: at run time (the paper's worked example); ``type`` is the key transformers 4.52.4 validates.
PHI3_LONGROPE = (
    "--hf-seq-len", "8",
    "--hf-config",
    ('phi3:rope_scaling={"type": "longrope", "short_factor": [1.0, 1.0, 1.0, 1.0], '
     '"long_factor": [2.0, 2.0, 2.0, 2.0]}'),
    "--hf-config", "phi3:original_max_position_embeddings=4",
)  # fmt: skip


@dataclass(frozen=True)
class PaperModel:
    """A model of the paper's table; ``paper_*`` are its break counts (None: not in the paper)."""

    model_type: str
    model_class: str
    checkpoint: str  # what the paper measured
    paper_before: int | None
    paper_after: int | None
    arguments: tuple[str, ...] = ()
    #: the regression gate (``--check``): at most this many logged break sites after the fixes
    logged_after: int = 0

    @property
    def target(self) -> str:
        return f"hf:{self.model_type}:{self.model_class}"


#: The paper's v1 table (see shared/notes/graphmend-paper.md): six models to 0 breaks, longformer 5 -> 2.
MODELS = (
    PaperModel("biogpt", "BioGptForCausalLM", "biogpt", 2, 0),
    PaperModel("blenderbot", "BlenderbotForConditionalGeneration", "blenderbot-400M-distill", 3, 0),
    PaperModel("t5", "T5ForConditionalGeneration", "flan-t5-large", 3, 0),
    # the `.item()` that picks the global-attention path (modeling_longformer.py:1272) has no fix
    PaperModel("longformer", "LongformerModel", "longformer-base-4096", 5, 2, logged_after=1),
    PaperModel("pegasus", "PegasusForCausalLM", "tiny-random-PegasusForCausalLM", 2, 0),
    PaperModel("phi3", "Phi3ForCausalLM", "Phi-4-mini-instruct (LongRoPE)", 5, 0, PHI3_LONGROPE),
    PaperModel("marian", "MarianMTModel", "extra, not in the paper", None, None),
)

#: transformers 5.x's output-capturing wrapper, which every model's forward runs through (GM505 fixes it there).
OUTPUT_CAPTURING_SCOPE = ("--scope-module", "transformers.utils.output_capturing",
                          "--scope-module", "transformers.utils.generic")  # fmt: skip
#: Model types of the installed release (5.23) that break, from the census (docs/benchmarks.md), gated in the
#: ``current`` environment beside the paper's models: every fixable site must stay fixed.
CURRENT_BREAKING = (
    PaperModel("ctrl", "CTRLModel", "census: buffer re-assigned in forward, output capturing", None, None,
               OUTPUT_CAPTURING_SCOPE),
    PaperModel("xlm", "XLMModel", "census: .item() in a length check", None, None, OUTPUT_CAPTURING_SCOPE),
    # `position_ids.max().item()` bounding the axial position slice (modeling_reformer.py:271) has no fix
    PaperModel("reformer", "ReformerModel", "census: numpy plan, .item() code path", None, None,
               OUTPUT_CAPTURING_SCOPE, logged_after=1),
)  # fmt: skip


@dataclass(frozen=True)
class Environment:
    label: str
    python: str


def ensure_venv(venv: Path, create: bool) -> str:
    """The venv's interpreter, as an absolute path; with *create*, make the venv first when it is missing.

    Absolute because verify runs it from another working directory (CI passes ``--venv .ci-tf452``).
    Not resolved: ``bin/python`` is a symlink, and following it would leave the venv.
    """
    venv = venv.absolute()
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    if not create:
        raise SystemExit(f"{python} is missing: pass --create-venv, or run\n  python -m venv {venv} && "
                         f"{venv}/bin/pip install {' '.join(VENV_PACKAGES)}")
    progress(f"creating {venv} with {' '.join(VENV_PACKAGES)}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", *VENV_PACKAGES], check=True)
    return str(python)


def environments(names: list[str], venv: Path, create: bool) -> list[Environment]:
    chosen = []
    for name in names:
        python = ensure_venv(venv, create) if name == PAPER_TRANSFORMERS else sys.executable
        chosen.append(Environment(name, python))
    return chosen


def verify_arguments(model: PaperModel, options: argparse.Namespace) -> list[str]:
    """verify's options for one model: its own, then the device and the benchmark settings."""
    arguments = [*model.arguments, "--device", options.device, "--timeout", str(options.timeout)]
    if options.bench:
        arguments += ["--bench", "--iters", str(options.iters), "--warmup", str(options.warmup)]
        arguments += ["--mode", options.mode] if options.mode else []
        arguments += ["--threads", str(options.threads)] if options.threads else []
    return arguments


# -- the table ------------------------------------------------------------------------------------


def arrow(before: Any, after: Any) -> str:
    return "-" if before is None or after is None else f"{before} -> {after}"


def bench_cells(result: dict[str, Any] | None) -> tuple[str, str]:
    """``cold s`` and ``steady ms`` as ``before -> after`` (``-`` without ``--bench``)."""
    bench = (result or {}).get("bench")
    if not bench:
        return "-", "-"
    original, fixed = bench["original"], bench["fixed"]
    cold = f"{original['cold_s']:.1f} -> {fixed['cold_s']:.1f}"
    steady = f"{original['steady_ms']:.2f} -> {fixed['steady_ms']:.2f}"
    return cold, steady


def versus_paper(model: PaperModel, after: dict[str, int] | None, equal: bool | None) -> str:
    """Whether we match the paper: as few breaks after (explain's count, the paper's) with equal outputs."""
    if model.paper_after is None or after is None:
        return "-"
    if not equal:
        return "NO (outputs)"
    ours = after["explain_breaks"]
    if ours < model.paper_after:
        return f"beats ({ours} < {model.paper_after})"
    return "matches" if ours == model.paper_after else f"NO ({ours} > {model.paper_after})"


HEADER = ("model", "paper before -> after", "logged sites", "fullgraph", "graphs", "breaks (explain)",
          "splitting sites", "outputs equal", "cold s", "steady ms", "fixes", "vs paper", "status")  # fmt: skip


def row_cells(model: PaperModel, run: VerifyRun) -> list[str]:
    result = run.result
    before, after = arm_counts(result, "original"), arm_counts(result, "fixed")
    equal = (result or {}).get("outputs_equal")

    def column(key: str) -> str:
        return arrow(before and before[key], after and after[key]) if before else "-"

    cold, steady = bench_cells(result)
    status = (result or {}).get("status", "no result").upper()
    return [model.target.removeprefix("hf:"), arrow(model.paper_before, model.paper_after), column("logged"),
            fullgraph_cell(result), column("graphs"), column("explain_breaks"), column("breaks"), yes_no(equal),
            cold, steady, ", ".join(fixes_applied(result)) or "-", versus_paper(model, after, equal), status]


def fullgraph_cell(result: dict[str, Any] | None) -> str:
    """``fails -> passes``: whether ``torch.compile(fullgraph=True)`` ran, before and after the fixes."""
    def word(arm: str) -> str | None:
        fullgraph = ((result or {}).get(arm) or {}).get("fullgraph")
        return None if fullgraph is None else ("passes" if fullgraph["passes"] else "fails")

    return arrow(word("original"), word("fixed"))


def gate_failures(label: str, rows: list[tuple[PaperModel, VerifyRun]]) -> list[str]:
    """Why the regression gate fails: more logged sites than the model allows, or changed outputs."""
    failures = []
    for model, run in rows:
        result = run.result or {}
        after = arm_counts(result, "fixed")
        if after is None or not result.get("outputs_equal"):
            failures.append(f"[{label}] {model.model_type}: {result.get('status', 'no result')}: {result.get('detail', '')}")
        elif after["logged"] > model.logged_after:
            failures.append(f"[{label}] {model.model_type}: {after['logged']} logged break sites after the fixes, "
                            f"at most {model.logged_after} expected")
    return failures


def notes(model: PaperModel, run: VerifyRun) -> list[str]:
    """Why a run failed, and the break sites left after the fixes."""
    result = run.result
    if result is None:
        return [f"{model.model_type}: verify wrote no result (exit {run.returncode}): {run.stderr_tail[-600:]}"]
    lines = [f"{model.model_type}: {result['status'].upper()}: {result['detail']}"] if result["detail"] else []
    for site in ((result.get("fixed") or {}).get("breaks") or []):
        where = f"{Path(site['filename']).name}:{site['line']} {site['gb_id']}"
        lines.append(f"{model.model_type}: left after the fixes: {where} ({'splits' if site['splits'] else 'no split'})")
    found, total = site_recall(result)
    if total:
        lines.append(f"{model.model_type}: linter found {found} of {total} runtime break sites")
    return lines


def render(label: str, versions: dict[str, str], rows: list[tuple[PaperModel, VerifyRun]]) -> str:
    environment: dict[str, Any] = next(
        (r.result["environment"] for _, r in rows if r.result and r.result.get("environment")), {}
    )
    device = environment.get("device_name") or environment.get("device") or "?"
    title = (f"## transformers {versions['transformers']} ({label}), torch {versions['torch']}, "
             f"Python {versions['python']}, device: {device}")
    table = markdown_table(HEADER, [row_cells(model, run) for model, run in rows])
    extra = [line for model, run in rows for line in notes(model, run)]
    return "\n".join([title, "", table, "", *extra, ""])


# -- driver ---------------------------------------------------------------------------------------


def measure(environment: Environment, versions: dict[str, str], models: list[PaperModel],
            options: argparse.Namespace) -> list[tuple[PaperModel, VerifyRun]]:
    rows = []
    for model in models:
        cache = options.cache_dir / versions["transformers"] / f"{model.model_type}.json"
        progress(f"[{environment.label}] verify {model.target} ...")
        run, cached = cached_verify(cache, environment.python, model.target, verify_arguments(model, options),
                                    options.timeout * 2 + 600, options.resume)
        progress(f"[{environment.label}] {model.target}: "
                 f"{(run.result or {}).get('status', 'no result')}{' (cached)' if cached else f' in {run.seconds:.0f}s'}")
        rows.append((model, run))
    return rows


def environment_models(label: str) -> tuple[PaperModel, ...]:
    """The paper's models; in the ``current`` environment also the census's breaking ones."""
    return MODELS if label == PAPER_TRANSFORMERS else (*MODELS, *CURRENT_BREAKING)


def selected_models(only: str | None, label: str) -> list[PaperModel]:
    models = environment_models(label)
    if not only:
        return list(models)
    names = [name.strip() for name in only.split(",") if name.strip()]
    known = {m.model_type for m in (*MODELS, *CURRENT_BREAKING)}
    unknown = sorted(set(names) - known)
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
    return [m for m in models if m.model_type in names]


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", choices=(PAPER_TRANSFORMERS, "current"),
                        help=f"environments to measure (repeatable; default: {PAPER_TRANSFORMERS} and current)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help=f"the {PAPER_TRANSFORMERS} venv")
    parser.add_argument("--create-venv", action="store_true", help="create --venv when it is missing")
    parser.add_argument("--only", help="comma-separated model types (default: all)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="passed to verify (default auto: CUDA when available)")
    parser.add_argument("--bench", action=argparse.BooleanOptionalAction, default=True,
                        help="time cold start and steady state (default on)")
    parser.add_argument("--iters", type=int, default=10, help="timed steady-state calls (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls before timing (default 2)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads in each arm (default 1: steadier on a small shared CPU; 0: torch's choice)")
    parser.add_argument("--mode", help="torch.compile mode, e.g. reduce-overhead as in the paper (GPU)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per arm (default 1800)")
    parser.add_argument("--cache-dir", type=Path, default=Path(".graphmend_paper_table"),
                        help="per-model results, reused when the command is unchanged")
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="reuse cached results (default on)")
    parser.add_argument("--json", type=Path, help="write every row and verify result here")
    parser.add_argument("--check", action="store_true",
                        help="regression gate: exit 1 when a model keeps more logged break sites after the fixes "
                             "than it allows (0; longformer 1) or its outputs change")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options = parse_arguments(argv)
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "environments": [],
    }
    outputs_ok = True
    failures: list[str] = []
    for environment in environments(options.env or [PAPER_TRANSFORMERS, "current"], options.venv,
                                    options.create_venv):
        versions = interpreter_versions(environment.python)
        rows = measure(environment, versions, selected_models(options.only, environment.label), options)
        print(render(environment.label, versions, rows), flush=True)
        outputs_ok &= all((run.result or {}).get("status") == "pass" for _, run in rows)
        failures += gate_failures(environment.label, rows)
        report["environments"].append({
            **asdict(environment), "versions": versions,
            "rows": [{"model": asdict(model), "cells": dict(zip(HEADER, row_cells(model, run))), "run": run.to_json()}
                     for model, run in rows],
        })  # fmt: skip
    report["machine"]["load_average_after"] = os.getloadavg()
    if options.json:
        options.json.write_text(json.dumps(report, indent=1) + "\n")
    if options.check:
        for failure in failures:
            print(f"GATE: {failure}", file=sys.stderr)
        return 1 if failures else 0
    return 0 if outputs_ok else 1


if __name__ == "__main__":
    sys.exit(main())
