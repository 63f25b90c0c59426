"""Does the whole transformers package, fixed on disk, still import and compute the same? (issue 13, "Done means")

The installed transformers is copied into a temporary folder (field_trial.py's
copying helpers, next to an empty ``[tool.graphmend-lint]`` table so no user
config leaks in) and fixed there with the real CLI::

    python -m graphmend_lint --fix --unsafe-fixes --scope modules --no-cache COPY

Every changed module is imported from the original and the fixed package
(import_check.py). Then, for each model type, two fresh interpreters build the
tiny random model exactly as the census's ``graphmend-lint verify
hf:<type>:<Class>`` does (``graphmend_lint.verify.hf``, same seed, the class
the census picks: the base model, else the first task model, see
``hf_census.model_types``; ``--hf-config`` as the census's) and run it
eagerly: one imports the original transformers, the other has the fixed copy
first on ``PYTHONPATH``; each checks that ``transformers.__file__`` is the one
intended. Two modes:

- ``eval``: ``model.eval()``, forward under ``torch.no_grad()``;
- ``train``: ``model.train()``, forward then backward of the sum of mean
  squares of the outputs (``verify --train``'s loss), every parameter's
  gradient kept. Dropout (torch, ``random`` and NumPy, which wav2vec2's
  SpecAugment uses) is seeded alike before the forward.

Outputs (flattened by ``verify.compare.flatten``) and gradients are saved with
``torch.save`` and compared in this process: bitwise, and else within
verify's tolerances. An exception (while building, in the forward or in the
backward) is an outcome too: both packages raising the same type and message
counts as equal, and the summary counts those runs apart from the runs that
compared real outputs. Nothing is compiled: this is eager behaviour only.
Examples::

    nice -n 10 python benchmarks/fixed_package_outputs.py
    python benchmarks/fixed_package_outputs.py --only bert,longformer --json out.json --keep /tmp/fixed
    python benchmarks/fixed_package_outputs.py --fixed-root /tmp/fixed   # reuse a kept (or hand-edited) copy
    python benchmarks/fixed_package_outputs.py --fixed-root /tmp/fixed --only gpt_oss,mixtral \
        --hf-config experts_implementation=eager   # the MoE variant: the experts loop GM401 rewrites

Exit status 1 when the fix breaks an import or changes any outcome.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from field_trial import copy_corpus, corpus_path, run_cli, snapshot
from hf_census import model_types
from import_check import check_imports
from verify_runs import REPO

#: The first break census's model types (issue 13), plus four that break nowhere, as a control.
FIRST_CENSUS_TYPES = (
    "longformer", "led", "reformer", "deberta", "ctrl", "big_bird", "bigbird_pegasus", "mixtral", "qwen2_moe",
    "qwen3_moe", "phimoe", "olmoe", "jamba", "granitemoe", "dbrx", "switch_transformers", "nllb-moe", "xlm",
    "flaubert", "wav2vec2", "hubert", "bart", "whisper", "bert", "gpt2", "t5", "llama",
)
#: Every type with a breaking model-mode in the census of transformers 5.23.0 (docs/benchmarks.md, the
#: per-model-mode table), plus gpt_oss and aria_text, which it measured with ``experts_implementation=eager``
#: (by default MoE experts run transformers' grouped kernel, not the loop GM401 rewrites: pass ``--hf-config``).
CENSUS_TYPES = (
    "big_bird", "bigbird_pegasus", "colpali", "ctrl", "data2vec-audio", "fastspeech2_conformer",
    "fastspeech2_conformer_with_hifigan", "flaubert", "higgs_audio_v2", "hubert", "ibert", "jetmoe", "led",
    "longformer", "m2m_100", "maskformer", "mra", "nllb-moe", "openai_privacy_filter", "reformer", "rwkv",
    "seamless_m4t", "seamless_m4t_v2", "sew", "sew-d", "slanet", "slanext", "superpoint", "unispeech",
    "unispeech-sat", "vits", "voxtral_realtime_encoder", "wav2vec2", "wav2vec2-conformer", "wavlm", "xlm", "yoso",
    "gpt_oss", "aria_text",
)
DEFAULT_TYPES = tuple(dict.fromkeys(FIRST_CENSUS_TYPES + CENSUS_TYPES))
MODES = ("eval", "train")
SAME_EXCEPTION = "same exception"
PACKAGE = "transformers"
#: Stands for the package folder in exception messages, which name files of the copy or of the original.
PACKAGE_MARK = "<transformers>"
#: Broken imports printed (one cause usually breaks every module that imports the broken one).
SHOWN = 20


# ---------------------------------------------------------------- child: one package, one model, both modes


def child_main(model_type: str, model_class: str, hf_config: str, expected_root: str, out_dir: str) -> int:
    """Run ``model_type`` in both modes with whatever transformers this interpreter imports; save each outcome.

    ``model_class`` is a class name of transformers' namespace, or ``-`` for
    ``AutoModel``; ``hf_config`` the ``--hf-config`` items as a JSON list.
    """
    import torch

    package_dir = str(Path(expected_root).resolve())
    torch.set_num_threads(1)  # the same on both sides, and kind to a shared machine
    try:
        import transformers
    except Exception as error:  # the package does not import: that is the outcome of every mode
        failed = {"outputs": None, "gradients": None, "error": "import transformers: " + describe(error, package_dir)}
        for mode in MODES:
            torch.save(failed, Path(out_dir) / f"{mode}.pt")
        return 0
    imported = str(Path(transformers.__file__).resolve().parent)
    if imported != package_dir:
        raise SystemExit(f"imported transformers from {imported}, expected {package_dir}")
    for mode in MODES:
        started = time.perf_counter()
        outcome = run_mode(model_type, None if model_class == "-" else model_class, json.loads(hf_config), mode,
                           package_dir)
        outcome["seconds"] = round(time.perf_counter() - started, 2)
        torch.save(outcome, Path(out_dir) / f"{mode}.pt")
    return 0


def describe(error: BaseException, package_dir: str) -> str:
    """``Type: message``, with the package folder (which differs between the two packages) masked."""
    return f"{type(error).__name__}: {str(error).replace(package_dir, PACKAGE_MARK)}"


def run_mode(model_type: str, model_class: str | None, hf_config: list[str], mode: str,
             package_dir: str) -> dict[str, Any]:
    """``{"outputs", "gradients", "error"}``: what one mode produced, or the exception that stopped it."""
    import random

    import numpy
    import torch

    from graphmend_lint.verify.cli import parse_hf_config
    from graphmend_lint.verify.compare import flatten
    from graphmend_lint.verify.hf import SEED, build_hf_workload
    from graphmend_lint.verify.training import backward_gradients
    from graphmend_lint.verify.workload import HfOptions

    outcome: dict[str, Any] = {"outputs": None, "gradients": None, "error": None}
    try:
        torch.manual_seed(SEED)  # as verify's arm: the random weights come from this seed
        workload = build_hf_workload(model_type, model_class, HfOptions(parse_hf_config(hf_config)))
        model = workload.callable
        if mode == "train":
            model.train()
        args, kwargs = workload.inputs[0]
        torch.manual_seed(SEED)
        random.seed(SEED)
        numpy.random.seed(SEED)
        with torch.enable_grad() if mode == "train" else torch.no_grad():
            value = model(*args, **kwargs)
            outcome["outputs"] = flatten(value)
            if mode == "train":
                outcome["gradients"] = backward_gradients(model, value)
    except Exception as error:  # an exception is an outcome, compared like an output
        outcome["error"] = describe(error, package_dir)
    return outcome


# ---------------------------------------------------------------- parent: fix, run both packages, compare


@dataclass
class Row:
    model_type: str
    mode: str
    outputs: str  # "bitwise", "within tolerance (max diff …)", "DIFFER: …", "not compared"
    gradients: str  # the same, or "-" in eval mode
    note: str  # the common exception, a timeout or a child's failure

    @property
    def differs(self) -> bool:
        return self.outputs.startswith("DIFFER") or self.gradients.startswith("DIFFER")

    @property
    def compared(self) -> bool:
        return "not compared" not in (self.outputs, self.gradients)

    @property
    def exception_only(self) -> bool:
        """Both packages raised the same exception: equal, but no output was compared."""
        return self.outputs == SAME_EXCEPTION


def compare_leaves(reference: Mapping[str, Any] | None, candidate: Mapping[str, Any] | None) -> str:
    """One verdict for two flattened outputs (or gradients): bitwise, within verify's tolerances, or differ."""
    from graphmend_lint.verify import compare

    if reference is None or candidate is None:
        return "bitwise" if reference is candidate else "DIFFER: present in one run only"
    exact = compare.compare([reference], [candidate], atol=0.0, rtol=0.0)
    if exact.outputs_equal:
        return "bitwise"
    close = compare.compare([reference], [candidate])
    if close.outputs_equal:
        return f"within tolerance (max abs diff {close.max_abs_diff:.3g})"
    return f"DIFFER: {close.detail}"


def compare_outcomes(model_type: str, mode: str, original: Mapping[str, Any] | str,
                     fixed: Mapping[str, Any] | str) -> Row:
    """A row from two saved outcomes; a string outcome is why a child left none (timeout, crash)."""
    gradient_default = "-" if mode == "eval" else "not compared"
    if isinstance(original, str) or isinstance(fixed, str):
        notes = [f"{arm}: {why}" for arm, why in (("original", original), ("fixed", fixed)) if isinstance(why, str)]
        return Row(model_type, mode, "not compared", gradient_default, "; ".join(notes))
    if original["error"] or fixed["error"]:
        if original["error"] == fixed["error"]:
            same = SAME_EXCEPTION
            return Row(model_type, mode, same, same if mode == "train" else "-", f"both raise {original['error']}")
        return Row(model_type, mode, "DIFFER: exception", "-" if mode == "eval" else "DIFFER: exception",
                   f"original: {original['error'] or 'returns'}; fixed: {fixed['error'] or 'returns'}")
    outputs = compare_leaves(original["outputs"], fixed["outputs"])
    gradients = "-" if mode == "eval" else compare_leaves(original["gradients"], fixed["gradients"])
    return Row(model_type, mode, outputs, gradients, "")


def run_child(model_type: str, model_class: str | None, hf_config: Sequence[str], package_root: Path,
              out_dir: Path, timeout: float, pythonpath: Path | None) -> dict[str, Mapping[str, Any] | str]:
    """Run :func:`child_main` in a fresh interpreter; ``{mode: outcome or why there is none}``.

    The package copy (if any) comes first on ``PYTHONPATH``, then this
    checkout, so that both sides build the model with the same verify code.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore", "PYTHONDONTWRITEBYTECODE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(str(path) for path in (pythonpath, REPO) if path is not None)
    command = [sys.executable, __file__, "--child", model_type, model_class or "-", json.dumps(list(hf_config)),
               str(package_root), str(out_dir)]
    why = ""
    try:
        completed = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout,
                                   env=env, cwd=out_dir)
        if completed.returncode != 0:
            why = f"child exited {completed.returncode}: " + (completed.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        why = f"timeout after {timeout:g} s"
    return {mode: load_outcome(out_dir / f"{mode}.pt", why or "no result saved") for mode in MODES}


def load_outcome(path: Path, why_missing: str) -> Mapping[str, Any] | str:
    import torch

    return torch.load(path, weights_only=True) if path.exists() else why_missing


def fix_copy(workdir: Path, timeout: float) -> tuple[Path, float, str]:
    """Copy the installed package under *workdir* and fix it: ``(the copy's parent, seconds, CLI errors)``."""
    (workdir / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
    copy = workdir / "fixed" / PACKAGE
    copy_corpus(corpus_path(PACKAGE), copy, sources_only=False)
    seconds, completed = run_cli(
        ["--fix", "--unsafe-fixes", "--scope", "modules", "--no-cache", "--exit-zero", str(copy)], workdir, timeout)
    errors = "" if completed.returncode == 0 else f"exit {completed.returncode}: {completed.stderr[-2000:]}"
    return copy.parent, seconds, errors


def changed_files(original: Path, copy: Path) -> list[str]:
    """Files of *copy* whose bytes differ from *original*'s (byte code is never copied, so never compared)."""
    before = snapshot(original)
    return sorted(path for path, digest in snapshot(copy).items() if before.get(path) != digest)


def table(rows: Sequence[Row]) -> str:
    lines = ["| model type | mode | outputs equal | gradients equal | note |", "|---|---|---|---|---|"]
    lines += [f"| {r.model_type} | {r.mode} | {r.outputs} | {r.gradients} | {r.note[:200]} |" for r in rows]
    return "\n".join(lines)


def summary(rows: Sequence[Row]) -> str:
    compared = [row for row in rows if row.compared]
    differ = [f"{row.model_type}/{row.mode}" for row in rows if row.differs]
    exceptions = [row for row in compared if row.exception_only]
    return (f"{len(rows)} runs: {len(compared)} compared, {len(compared) - len(differ)} equal "
            f"({len(compared) - len(differ) - len(exceptions)} on real outputs, {len(exceptions)} only on the "
            f"same exception), {len(differ)} differ{' (' + ', '.join(differ) + ')' if differ else ''}, "
            f"{len(rows) - len(compared)} not compared")


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["--child"]:
        return child_main(*arguments[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated model types (default: the census types and 4 controls)")
    parser.add_argument("--hf-config", action="append", default=[], metavar="[TYPE:]KEY=VALUE",
                        help="a config field, as verify's and the census's --hf-config "
                        "(e.g. experts_implementation=eager for the MoE variant)")
    parser.add_argument("--json", type=Path, help="write the rows, changed files and import results here")
    parser.add_argument("--keep", type=Path, help="keep the fixed copy (and each run's saved outcomes) here")
    parser.add_argument("--fixed-root", type=Path,
                        help=f"use this folder's already fixed {PACKAGE}/ instead of copying and fixing")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per model and package (default 600)")
    args = parser.parse_args(arguments)
    types = args.only.split(",") if args.only else list(DEFAULT_TYPES)

    workdir = Path(tempfile.mkdtemp(prefix="gm-fixed-package-"))
    try:
        original_root = corpus_path(PACKAGE)
        if args.fixed_root:
            fixed_parent, fix_seconds, cli_errors = args.fixed_root.resolve(), 0.0, ""
        else:
            print(f"fixing a copy of {original_root} ...", file=sys.stderr, flush=True)
            fixed_parent, fix_seconds, cli_errors = fix_copy(workdir, timeout=3600)
        changed = changed_files(original_root, fixed_parent / PACKAGE)
        changed_py = [f"{PACKAGE}/{path}" for path in changed if path.endswith(".py")]
        print(f"{len(changed)} files changed; importing them ...", file=sys.stderr, flush=True)
        imports = check_imports(original_root.parent, fixed_parent, changed_py)
        classes = dict(model_types())  # the census's class per type, read from the original package

        rows = []
        for model_type in types:
            model_class = classes.get(model_type)
            print(f"{model_type} ({model_class or 'AutoModel'}) ...", file=sys.stderr, flush=True)
            runs = workdir / "runs" / model_type
            original = run_child(model_type, model_class, args.hf_config, original_root, runs / "original",
                                 args.timeout, None)
            fixed = run_child(model_type, model_class, args.hf_config, fixed_parent / PACKAGE, runs / "fixed",
                              args.timeout, fixed_parent)
            rows += [compare_outcomes(model_type, mode, original[mode], fixed[mode]) for mode in MODES]
            print(table(rows[-len(MODES):]).splitlines()[-1], file=sys.stderr, flush=True)

        source = f"reused {fixed_parent}" if args.fixed_root else f"{fix_seconds:.0f} s"
        print(f"files changed by the fix: {len(changed)} ({source})"
              + (f"; CLI failed: {cli_errors}" if cli_errors else ""))
        print(f"changed modules imported: {imports.checked}, broken by the fix: {len(imports.broken_by_fix)}, "
              f"failing before too: {imports.failing_before_too}")
        for item in imports.broken_by_fix[:SHOWN]:
            print(f"  import broken: {item}")
        if len(imports.broken_by_fix) > SHOWN:
            print(f"  ... and {len(imports.broken_by_fix) - SHOWN} more (all of them in --json)")
        print(table(rows))
        print(summary(rows))
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.copytree(workdir, args.keep, symlinks=True)
        if args.json:
            payload = {
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "machine": {"platform": platform.platform(), "python": platform.python_version(),
                            "cpus": os.cpu_count()},
                "hf_config": args.hf_config, "fix_seconds": round(fix_seconds, 1), "changed": changed,
                "cli_errors": cli_errors,
                "imports": asdict(imports), "rows": [asdict(row) for row in rows], "summary": summary(rows),
            }
            args.json.write_text(json.dumps(payload, indent=2) + "\n")
        failed = cli_errors or imports.broken_by_fix or any(row.differs for row in rows)
        return 1 if failed else 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
