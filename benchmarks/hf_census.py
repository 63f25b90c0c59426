"""Census of the installed transformers (issue 15): logged graph breaks of every model type that builds tiny.

Every model type of ``transformers.CONFIG_MAPPING`` gets a model class: its
base model (``AutoModel``'s mapping), else the first class of a task mapping
(:data:`TASK_MAPPINGS`: causal LM, seq2seq, image classification...). A type
with none is a sub-config of a composite model (``clip_text_model``...),
measured through its parent, and is listed as a skip. The rest is measured
in two stages, each resumable (one JSON file per model and stage under
``--cache-dir/<transformers version>/``):

1. **scan**: the original code only, in eval mode and in train mode
   (``model.train()``, forward and backward, see
   ``graphmend_lint/verify/training.py``), each one verify *arm* in a fresh
   process: the break sites Dynamo logs, the frames it skipped and whether
   ``torch.compile(fullgraph=True)`` runs. A model that cannot be built or run
   is a skip with its reason (:data:`ERROR_CLASSES`).
2. **verify**: for each model and mode whose scan logged a break, the full
   ``graphmend-lint verify hf:<type> [--train]`` twice: with the safe fixes
   only (plain ``--fix``) and with ``--unsafe-fixes``. Each compares logged
   sites, ``fullgraph=True``, outputs (and in train mode every parameter's
   gradient) before and after the fixes.

Then ``census_report.py`` aggregates the caches: per model, per break
category (``break_categories.py``) and overall. Examples::

    nice -n 10 python benchmarks/hf_census.py --stage scan            # hours: every type, eval and train
    nice -n 10 python benchmarks/hf_census.py --stage verify          # the breaking ones, safe and unsafe
    python benchmarks/hf_census.py --stage report --json census.json  # reads the caches only
    python benchmarks/hf_census.py --only longformer,led --stage all
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from verify_runs import arm_environment, interpreter_versions, progress

MODES = ("eval", "train")
#: The fix levels of the verify stage: plain ``--fix`` (safe fixes) and ``--fix --unsafe-fixes``.
FIX_LEVELS = ("safe", "unsafe")
#: Modules fixed in memory besides verify's hf default (the model's package, rope and masking utils):
#: transformers' output-capturing wrapper and generic helpers, and the MoE experts integration,
#: which every MoE model and the big birds run through (scan: where the logged sites are).
EXTRA_SCOPE = ("transformers.utils.output_capturing", "transformers.utils.generic", "transformers.integrations.moe")
UNKNOWN = "unknown model type"
SUB_CONFIG = "sub-config of a composite model (no class in any auto mapping)"
CONFIG = "config cannot build"
DEPENDENCY = "missing dependency"
NO_INPUTS = "no dummy inputs"
FORWARD = "forward fails on dummy inputs"
BACKWARD = "backward fails"
DYNAMO = "Dynamo error"
TIMEOUT = "timeout"
OUT_OF_MEMORY = "out of memory"
ARM_ERROR = "arm error"
#: Substrings of an arm's error text, first match wins (``graphmend_lint/verify/arm.py`` and ``hf.py``).
ERROR_CLASSES = (
    ("timed out", TIMEOUT),
    ("out-of-memory killer", OUT_OF_MEMORY),
    ("can't allocate memory", OUT_OF_MEMORY),
    ("MemoryError", OUT_OF_MEMORY),
    ("bad_alloc", OUT_OF_MEMORY),
    ("no dummy inputs", NO_INPUTS),
    ("ModuleNotFoundError", DEPENDENCY),
    ("requires the", DEPENDENCY),
    ("ImportError", DEPENDENCY),
    ("cannot build", CONFIG),
    ("invalid config", CONFIG),
    ("did not build a PreTrainedModel", CONFIG),
    ("factory failed", CONFIG),
    ("backward", BACKWARD),
    ("callable failed", FORWARD),
    ("dynamo failed", DYNAMO),
)
#: Task mappings tried, in order, for a type without a base model (``MODEL_FOR_<task>_MAPPING_NAMES``).
TASK_MAPPINGS = (
    "CAUSAL_LM", "SEQ_TO_SEQ_CAUSAL_LM", "SPEECH_SEQ_2_SEQ", "MULTIMODAL_LM", "IMAGE_TEXT_TO_TEXT",
    "IMAGE_CLASSIFICATION", "BACKBONE", "DEPTH_ESTIMATION", "SEMANTIC_SEGMENTATION", "UNIVERSAL_SEGMENTATION",
    "OBJECT_DETECTION", "KEYPOINT_DETECTION", "KEYPOINT_MATCHING", "POSE_ESTIMATION", "IMAGE_MATTING",
    "TABLE_RECOGNITION", "DECISION", "PRETRAINING", "RETRIEVAL", "TEXT_TO_WAVEFORM", "NORMAL_ESTIMATION",
)  # fmt: skip

LIST_TYPES = """
import json, sys
from transformers import CONFIG_MAPPING
from transformers.models.auto import modeling_auto
def name(value):
    return value[0] if isinstance(value, (tuple, list)) else value
mappings = [modeling_auto.MODEL_MAPPING_NAMES] + [
    getattr(modeling_auto, f"MODEL_FOR_{task}_MAPPING_NAMES", {}) for task in json.loads(sys.argv[1])]
print(json.dumps([[t, next((name(m[t]) for m in mappings if t in m), None)] for t in sorted(CONFIG_MAPPING)]))
"""


def model_types() -> list[tuple[str, str | None]]:
    """``(model_type, model class or None)`` for every config of this interpreter's transformers."""
    completed = subprocess.run([sys.executable, "-c", LIST_TYPES, json.dumps(TASK_MAPPINGS)], capture_output=True,
                               text=True, check=True, env=arm_environment())
    return [(t, c) for t, c in json.loads(completed.stdout.strip().splitlines()[-1])]


def select(types: list[tuple[str, str | None]], only: str | None, limit: int | None,
           random_order: bool = False) -> list[tuple[str, str | None]]:
    """``--only`` (in the order given) then ``--limit``; an unknown name keeps :data:`UNKNOWN` as its class.

    ``random_order`` sorts by a hash of the name instead (the same order on
    every run), so that a census cut short has measured a random sample of
    the types, not the first letters of the alphabet.
    """
    if only:
        known = dict(types)
        types = [(name, known.get(name, UNKNOWN)) for name in (n.strip() for n in only.split(",")) if name]
    if random_order:
        types = sorted(types, key=lambda item: hashlib.sha256(item[0].encode()).hexdigest())
    return types[:limit] if limit else types


def classify_error(text: str) -> str:
    """The skip reason for an arm's error text."""
    return next((reason for needle, reason in ERROR_CLASSES if needle in text), ARM_ERROR)


def hf_target(model_type: str, model_class: str) -> str:
    """``hf:<type>:<Class>``: the class named, so that a type without a base model gets its task model."""
    return f"hf:{model_type}:{model_class}"


# -- stage 1: scan (original code only, many models per process) -------------------------------------


SCAN_WORKER = Path(__file__).with_name("census_scan.py")
#: A worker that names no new model for this long past the per-model timeout is killed.
SCAN_GRACE_S = 120


def cached_scan(cache_dir: Path, model_type: str, mode: str) -> dict[str, Any] | None:
    """The cached scan of one type and mode measured on this host, whatever the method (shared or fresh process)."""
    path = cache_dir / f"scan-{mode}" / f"{model_type}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data if data.get("host") == platform.node() else None


def scan_skip(scan: dict[str, Any]) -> str | None:
    """Why a scan measured nothing (``None`` when it measured the breaks)."""
    return None if "arm" in scan else scan.get("skip") or classify_error(scan.get("error", ""))


def logged_sites(scan: dict[str, Any] | None) -> int:
    """Logged break sites of a scan result (0 for a skip or no result)."""
    return ((scan or {}).get("arm") or {}).get("logged_sites", 0)


def record_crash(cache_dir: Path, target: str, why: str, timeout_s: int) -> None:
    """The model a worker died on gets a result saying so, and the next worker starts after it."""
    model_type = target.split(":")[1]
    for mode in MODES:
        path = cache_dir / f"scan-{mode}" / f"{model_type}.json"
        if not path.exists():
            key = {"target": target, "mode": mode, "timeout_s": timeout_s, "method": "shared process"}
            data = {"key": key, "host": platform.node(), "seconds": 0.0, "error": why, "skip": classify_error(why)}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1) + "\n")


def run_scan_worker(cache_dir: Path, targets: list[str], timeout_s: int, hf_config: dict[str, Any]) -> None:
    """Scan ``targets`` in worker processes until each has a result, restarting after a crash or a hang."""
    current = cache_dir / "scan-current.txt"
    while targets:
        current.unlink(missing_ok=True)
        process = subprocess.Popen([sys.executable, str(SCAN_WORKER), str(cache_dir), str(timeout_s),
                                    json.dumps(hf_config), *targets],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                                   env=arm_environment())
        stderr_tail, stalled = _watch(process, current, 2 * timeout_s + SCAN_GRACE_S)
        done = {t for t in targets if all(cached_scan(cache_dir, t.split(":")[1], mode) for mode in MODES)}
        if process.returncode != 0 and current.exists():
            crashed = current.read_text()
            record_crash(cache_dir, crashed, f"the scan process {crash_reason(process.returncode, stalled)} on "
                         f"this model: {stderr_tail[-500:]}",
                         timeout_s)
            done.add(crashed)
        elif process.returncode != 0:
            raise RuntimeError(f"the scan worker failed before any model: {stderr_tail}")
        targets = [t for t in targets if t not in done]


def crash_reason(returncode: int, stalled: bool) -> str:
    """Why a worker died: killed by :func:`_watch` (a stall), by someone else's SIGKILL, or its own crash.

    A SIGKILL the census did not send comes, on a machine without a GPU,
    from the kernel's out-of-memory killer (t5gemma's tiny build took 23 GB
    on 2026-11-24, see ``dmesg``): not a timeout.
    """
    if stalled:
        return "timed out"
    if returncode == -signal.SIGKILL:
        return "was killed (SIGKILL not sent by the census: the kernel's out-of-memory killer, most likely)"
    return f"crashed (exit {returncode})"


def _watch(process: subprocess.Popen[str], current: Path, stall_s: float) -> tuple[str, bool]:
    """Wait for the worker, killing it when one model takes longer than ``stall_s``; its stderr's tail, and
    whether it was killed here."""
    import threading

    tail: list[str] = []
    reader = threading.Thread(target=lambda: tail.extend(process.stderr or ()), daemon=True)
    reader.start()
    last, since, stalled = None, time.monotonic(), False
    while process.poll() is None:
        time.sleep(2)
        now = current.read_text() if current.exists() else None
        if now != last:
            last, since = now, time.monotonic()
            if now:
                progress(f"[scan] {now}")
        elif time.monotonic() - since > stall_s:
            process.kill()
            process.wait()
            stalled = True
    reader.join(timeout=5)
    return "".join(tail[-20:]), stalled


def scan_stage(chosen: Iterable[tuple[str, str | None]], cache_dir: Path, options: argparse.Namespace) -> None:
    todo = [hf_target(t, c) for t, c in chosen if c not in (None, UNKNOWN)
            if not (options.resume and all(cached_scan(cache_dir, t, mode) for mode in MODES))]
    progress(f"[scan] {len(todo)} model types to scan, eval and train")
    if not options.resume:
        for target in todo:
            for mode in MODES:
                (cache_dir / f"scan-{mode}" / f"{target.split(':')[1]}.json").unlink(missing_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    run_scan_worker(cache_dir, todo, options.timeout, hf_config(options))


# -- stage 2: verify (one original arm, then the safe and the unsafe fixes) ------------------------------


def verify_key(target: str, mode: str, timeout_s: int, config: dict[str, Any]) -> dict[str, Any]:
    key = {"target": target, "mode": mode, "timeout_s": timeout_s, "scope_extra": list(EXTRA_SCOPE),
           "levels": list(FIX_LEVELS)}
    return key | ({"hf_config": config} if config else {})


def run_verify_levels(target_text: str, mode: str, timeout_s: int, config: dict[str, Any]) -> dict[str, Any]:
    """The original arm of one model in one mode, then a fixed arm per fix level, each in a fresh process.

    The fixes are verify's own (``LinterTransform``, scope ``modules`` as for
    every ``hf:`` target, the model's package plus :data:`EXTRA_SCOPE` fixed
    in memory): exactly ``graphmend-lint verify TARGET --scope-module ...
    [--unsafe-fixes] [--train] --no-reconcile``, but the original arm runs once
    for both levels. A level whose fixes change no text is not run (``None``).
    """
    import tempfile

    from graphmend_lint.config import load_settings, with_overrides
    from graphmend_lint.verify.hook import LinterTransform, identity
    from graphmend_lint.verify.runner import ArmPlan, RunOptions, verify_variants
    from graphmend_lint.verify.targets import HfOptions, default_scope_modules, parse_target

    target = parse_target(target_text)
    target = replace(target, hf=HfOptions(tuple((None, key, value) for key, value in config.items())))
    scope = tuple(dict.fromkeys([*default_scope_modules(target), *EXTRA_SCOPE]))
    base = load_settings(None, Path(tempfile.gettempdir()))
    variants = {}
    for level in FIX_LEVELS:
        settings = with_overrides(base, scope="modules", unsafe_fixes=level == "unsafe")
        variants[level] = ArmPlan(scope, LinterTransform(settings, level == "unsafe"))
    options = RunOptions(device="cpu", train=mode == "train", timeout_s=timeout_s)
    original, results = verify_variants(target, ArmPlan(scope, identity), variants, options,
                                        lambda message: progress(f"  {message}"))
    if isinstance(original, str):
        return {"error": original[-3000:], "skip": classify_error(original)}
    levels = {}
    for level, result in results.items():
        levels[level] = None if result is None else result.to_json() | (
            site_changes(original, result.fixed) if result.fixed else {})
    return {"original": original.to_json(), "levels": levels}


def site_changes(original: Any, fixed: Any) -> dict[str, list[list[Any]]]:
    """Which original sites are still logged after the fixes, and which logged sites are new.

    The fixed arm reports breaks at the fixed text's lines; they are mapped
    back to original lines (``graphmend_lint.verify.reconcile.line_map``). A
    break on a line a fix wrote maps to no original line: it is *new*.
    Sites are ``[filename, line, gb_id]`` (new ones at their fixed line).
    """
    import importlib.util
    import os

    from graphmend_lint.verify.reconcile import line_map

    maps = {os.path.realpath(path): line_map(importlib.util.decode_source(Path(path).read_bytes()), text)
            for path, text in fixed.fixed_texts.items()}
    before = {(os.path.realpath(b.filename), b.line): b for b in original.breaks}
    remaining, new = [], []
    for site in fixed.breaks:
        path = os.path.realpath(site.filename)
        line = maps[path].get(site.line) if path in maps else site.line
        if line is not None and (path, line) in before:
            kept = before[(path, line)]
            remaining.append([kept.filename, kept.line, kept.gb_id])
        else:
            new.append([site.filename, site.line, site.gb_id])
    return {"remaining_sites": sorted(map(list, {tuple(r) for r in remaining})), "new_sites": new}


def cached_verify_levels(cache_dir: Path, model_type: str, target: str, mode: str, options: argparse.Namespace
                         ) -> tuple[dict[str, Any], bool]:
    path = cache_dir / f"verify-{mode}" / f"{model_type}.json"
    key = verify_key(target, mode, options.timeout, hf_config(options))
    if options.resume and path.exists():
        data = json.loads(path.read_text())
        if data.get("key") == key and data.get("host") == platform.node():
            return data, True
    started = time.perf_counter()
    data = {"key": key, "host": platform.node(), **run_verify_levels(target, mode, options.timeout,
                                                                      hf_config(options))}
    data["seconds"] = time.perf_counter() - started
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data, False


def cached_verify_result(cache_dir: Path, model_type: str, mode: str) -> dict[str, Any] | None:
    """The verify stage's cached result of one type and mode measured on this host, if any."""
    path = cache_dir / f"verify-{mode}" / f"{model_type}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data if data.get("host") == platform.node() else None


def breaking(cache_dir: Path, model_type: str, mode: str) -> bool:
    return logged_sites(cached_scan(cache_dir, model_type, mode)) > 0


def verify_stage(chosen: Iterable[tuple[str, str | None]], cache_dir: Path, options: argparse.Namespace) -> None:
    work = [(t, c, mode) for t, c in chosen if c not in (None, UNKNOWN) for mode in MODES
            if breaking(cache_dir, t, mode)]
    for index, (model_type, model_class, mode) in enumerate(work, 1):
        data, cached = cached_verify_levels(cache_dir, model_type, hf_target(model_type, model_class), mode, options)
        levels = data.get("levels") or {}
        state = data.get("skip") or ", ".join(
            f"{level} {'no fix' if r is None else r['status']}" for level, r in levels.items())
        progress(f"[verify {index}/{len(work)}] {model_type} {mode}: {state} ({data['seconds']:.0f} s"
                 f"{', cached' if cached else ''})")


def hf_config(options: argparse.Namespace) -> dict[str, Any]:
    """``--hf-config KEY=VALUE`` items as a dict (VALUE parsed as JSON when it parses)."""
    config = {}
    for item in options.hf_config:
        key, _, raw = item.partition("=")
        try:
            config[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            config[key.strip()] = raw
    return config


def variant_name(config: dict[str, Any]) -> str:
    """The cache sub-folder of a census with config overrides ("" for the default census)."""
    return "+".join(f"{key}={value}" for key, value in sorted(config.items())).replace("/", "_")


# -- driver ---------------------------------------------------------------------------------------


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("scan", "verify", "report", "all"), default="all",
                        help="scan: original arm of every type, eval and train; verify: safe and unsafe fixes of "
                        "the breaking ones; report: tables from the caches (default: all three)")
    parser.add_argument("--only", help="comma-separated model types, in this order (default: every type)")
    parser.add_argument("--limit", type=int, help="at most this many types (after --only)")
    parser.add_argument("--random-order", action="store_true",
                        help="measure in a fixed pseudo-random order, so that a run cut short is a random sample")
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="reuse results cached for the same measurement on this host (default on)")
    parser.add_argument("--cache-dir", type=Path, default=Path(".graphmend_census"),
                        help="per-model results (default .graphmend_census/ in the current directory)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per arm (default 600)")
    parser.add_argument("--hf-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a config field for every model (VALUE parsed as JSON when it parses), e.g. "
                        "experts_implementation=eager for MoE dispatch; results go to their own cache folder")
    parser.add_argument("--json", type=Path, help="report: write every table's data here")
    parser.add_argument("--models-table", action="store_true", help="report: also print a row per model and mode")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options = parse_arguments(argv)
    versions = interpreter_versions(sys.executable)
    cache_dir = options.cache_dir / versions["transformers"] / variant_name(hf_config(options))
    chosen = select(model_types(), options.only, options.limit, options.random_order)
    if options.stage in ("scan", "all"):
        scan_stage(chosen, cache_dir, options)
    if options.stage in ("verify", "all"):
        verify_stage(chosen, cache_dir, options)
    if options.stage in ("report", "all"):
        import census_report

        return census_report.main(chosen, cache_dir, versions, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
