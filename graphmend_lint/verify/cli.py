"""``graphmend-lint verify TARGET... [options]``: measure what the fixes really do.

For each target, the original code and the code as graphmend-lint would fix
it (in memory, through :mod:`.hook`) run in two fresh subprocesses; the
report compares their graph breaks and outputs and reconciles the breaks
with the static findings. Exit codes: 0 every target passed (no more logged
breaks after the fix, ``fullgraph=True`` not lost, equal outputs), 1 some fix
failed or no fix was applied because they all need ``--unsafe-fixes``, 2 an
error kept a target from being verified.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphmend_lint.baseline import BaselineError
from graphmend_lint.config import SCOPES, ConfigError, Settings, cli_codes, load_settings, with_overrides
from graphmend_lint.verify.bench import BenchOptions
from graphmend_lint.verify.hook import LinterTransform, ReferencedTransform, identity
from graphmend_lint.verify.plot import PlotUnavailable, require_matplotlib
from graphmend_lint.verify.results import ERROR, PASS, TargetResult
from graphmend_lint.verify.runner import ArmPlan, RunOptions, verify_target
from graphmend_lint.verify.targets import (
    HfOptions,
    TargetError,
    TargetSpec,
    default_lint_scope,
    default_scope_modules,
    targets_from_strings,
)

EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
GATE_FORMATS = ("text", "json", "github", "sarif")
#: Options of a full verification that mean nothing to the gate, which runs the original code only.
_NOT_FOR_THE_GATE = {"bench": "--bench", "json": "--json", "markdown": "--markdown", "plot": "--plot",
                     "transform": "--transform", "unsafe_fixes": "--unsafe-fixes"}


class UsageError(Exception):
    """A bad option value; reported without a traceback, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphmend-lint verify",
        description="Run targets before and after graphmend-lint's fixes (applied in memory) under torch Dynamo, "
        "and compare graph breaks, outputs and, with --bench, latency.",
        epilog="TARGET: path/to/file.py::factory, package.module:factory or hf:<model_type>[:<ModelClass>]. "
        "With no TARGET, [tool.graphmend-lint.verify] targets are used. See docs/verify.md.",
    )
    parser.add_argument("targets", nargs="*", metavar="TARGET")
    fixing = parser.add_argument_group("fixing (in memory)")
    fixing.add_argument("--scope-module", action="append", metavar="MOD",
                        help="another module (or package) to fix in memory and lint, on top of the target's "
                        "default scope (its own module; for hf: the model's package and shared transformers "
                        "modules); repeatable")
    fixing.add_argument("--scope", choices=SCOPES,
                        help="linter scope for fixing and linting (default: the configured scope for "
                        "file/module targets, whose callable is treated as compiled; modules for hf)")
    fixing.add_argument("--select", action="append", metavar="CODES", help="rules whose fixes to apply")
    fixing.add_argument("--ignore", action="append", metavar="CODES", help="rules whose fixes not to apply")
    fixing.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply unsafe fixes")
    fixing.add_argument("--transform", metavar="REF",
                        help="use this (source, filename) -> source function (file.py::name or module:name) "
                        "instead of graphmend-lint's fixes, e.g. to try a rewrite that is not a rule yet")
    hf = parser.add_argument_group("hugging face targets")
    hf.add_argument("--hf-config", action="append", default=[], metavar="[TYPE:]KEY=VALUE",
                    help="set a config field (VALUE parsed as JSON when possible); TYPE: limits it to one model type")
    hf.add_argument("--hf-seq-len", type=int, default=13, metavar="N", help="length of dummy token inputs (default 13)")
    running = parser.add_argument_group("running")
    running.add_argument("--seed", type=int, default=0)
    running.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                         help="where both arms run (default: cuda when available)")
    running.add_argument("--grad", action="store_true", help="run with autograd enabled (default: torch.no_grad)")
    running.add_argument("--train", action="store_true",
                         help="train mode: model.train(), autograd on, and after each eager call a backward pass "
                         "whose gradients are compared too (dropout stays on, seeded alike in both arms)")
    running.add_argument("--atol", type=float, help="absolute tolerance for outputs (default: factory's, else 1e-6)")
    running.add_argument("--rtol", type=float, help="relative tolerance for outputs (default: factory's, else 1e-5)")
    running.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS", help="per arm (default 1800)")
    running.add_argument("--no-reconcile", action="store_true", help="skip linting the scope files")
    running.add_argument("--config", metavar="FILE", help="pyproject.toml or graphmend-lint.toml to read")
    running.add_argument("-v", "--verbose", action="store_true", help="show the arms' own output and tracebacks")
    bench = parser.add_argument_group("benchmark")
    bench.add_argument("--bench", action="store_true", help="time cold start, steady state and eager")
    bench.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor)")
    bench.add_argument("--mode", default=None, help="torch.compile mode (default none)")
    bench.add_argument("--iters", type=int, default=20, help="timed steady-state calls (default 20)")
    bench.add_argument("--warmup", type=int, default=3, help="untimed calls before timing (default 3)")
    bench.add_argument("--cold-runs", type=int, default=3, metavar="N",
                       help="fresh processes per arm that time the cold start; the report gives their median "
                       "and range (default 3)")
    bench.add_argument("--threads", type=int, metavar="N",
                       help="torch.set_num_threads(N) in both arms (default: torch's choice); 1 avoids OpenMP "
                       "stalls on a busy or small machine")
    output = parser.add_argument_group("output")
    output.add_argument("--json", metavar="FILE", help="write one JSON object per target")
    output.add_argument("--markdown", metavar="FILE", help="write a Markdown report for a pull request")
    output.add_argument("--plot", metavar="FILE.png", help="write a before/after bar chart (needs matplotlib)")
    gate = parser.add_argument_group(
        "break gate (CI)", "measure the ORIGINAL code only (no fix applied): logged break sites and recompiles"
    )
    gate.add_argument("--write-baseline", metavar="FILE",
                      help="store each target's logged break sites and recompiles in FILE")
    gate.add_argument("--baseline", metavar="FILE",
                      help="exit 1 when a target's logged break sites or recompiles grow beyond FILE")
    gate.add_argument("--output-format", choices=GATE_FORMATS, default="text",
                      help="the gate's report on stdout (default text; other formats also print text on stderr)")
    return parser


def parse_hf_config(items: Sequence[str]) -> tuple[tuple[str | None, str, Any], ...]:
    """``[TYPE:]KEY=VALUE`` items; VALUE is JSON when it parses, else a string."""
    parsed = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--hf-config {item!r}: expected [TYPE:]KEY=VALUE")
        owner, colon, name = key.partition(":")
        owner_or_none, field = (owner, name) if colon else (None, key)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        parsed.append((owner_or_none, field.strip(), value))
    return tuple(parsed)


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(Path(args.config) if args.config else None, Path.cwd())


def lint_settings_for(target: TargetSpec, base: Settings, args: argparse.Namespace) -> Settings:
    """The linter settings that fix and lint one target's modules."""
    return with_overrides(
        base,
        scope=args.scope or default_lint_scope(target, base.scope),
        select=cli_codes(args.select, "--select"),
        ignore=cli_codes(args.ignore, "--ignore"),
        unsafe_fixes=args.unsafe_fixes,
    )


def _targets(args: argparse.Namespace, settings: Settings) -> list[TargetSpec]:
    hf = HfOptions(parse_hf_config(args.hf_config), args.hf_seq_len)
    if args.targets:
        return targets_from_strings(args.targets, Path.cwd(), hf)
    if settings.verify_targets:
        return targets_from_strings(settings.verify_targets, Path(settings.root), hf)
    raise UsageError("no TARGET given and no [tool.graphmend-lint.verify] targets configured")


def _progress_printer() -> Callable[[str], None]:
    started = time.perf_counter()

    def show(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    return show


def _prefixed(show: Callable[[str], None], name: str) -> Callable[[str], None]:
    def prefixed(message: str) -> None:
        show(f"{name} {message}")

    return prefixed


def _run_options(args: argparse.Namespace) -> RunOptions:
    if args.iters < 1 or args.cold_runs < 1 or args.warmup < 0 or (args.threads is not None and args.threads < 1):
        raise UsageError("--iters, --cold-runs and --threads must be at least 1 and --warmup at least 0")
    bench = BenchOptions(args.backend, args.mode, args.iters, args.warmup) if args.bench else None
    return RunOptions(
        args.seed, args.device, args.grad, args.train, args.atol, args.rtol, bench, args.timeout, args.verbose,
        args.threads, args.cold_runs,
    )


def _scope(target: TargetSpec, args: argparse.Namespace) -> tuple[str, ...]:
    """The modules an arm compiles through the hook: the target's default scope plus ``--scope-module``."""
    return tuple(dict.fromkeys([*default_scope_modules(target), *(args.scope_module or ())]))


def _check_gate_options(args: argparse.Namespace) -> None:
    if args.baseline and args.write_baseline:
        raise UsageError("give --baseline FILE or --write-baseline FILE, not both")
    if not (args.baseline or args.write_baseline):
        if args.output_format != "text":
            raise UsageError("--output-format is for the break gate: use it with --baseline or --write-baseline")
        return
    given = [flag for name, flag in _NOT_FOR_THE_GATE.items() if getattr(args, name)]
    if given:
        raise UsageError(f"{', '.join(given)} cannot be used with --baseline/--write-baseline, which measure "
                         "the original code only")


def gate_main(args: argparse.Namespace) -> int:
    """``--baseline``/``--write-baseline``: measure each target's original code, then compare or store it.

    A bad baseline file is reported before any target runs: minutes of
    compiling must not end in "cannot read breaks.json".
    """
    from graphmend_lint.verify import baseline, gate, gate_report

    path = Path(args.baseline or args.write_baseline)
    stored = baseline.read_baseline(path) if args.baseline else None
    settings = _settings(args)
    targets = _targets(args, settings)
    options = replace(_run_options(args), recompiles=True)
    show = _progress_printer()
    measured: dict[str, baseline.Measurement | str] = {}
    for index, target in enumerate(targets, 1):
        name = gate.baseline_key(target, settings.root)
        show(f"{name} ({index}/{len(targets)}): measuring the original code (no fix applied)")
        plan = ArmPlan(_scope(target, args), identity)
        measured[name] = gate.measure_original(target, plan, options, _prefixed(show, name), settings.root)
    run = gate.gate_run(path, stored is None, measured, stored)
    if run.writing and not run.errors:
        baseline.write_baseline(path, {name: m.breaks for name, m in run.measured.items()})
    sys.stdout.write(gate_report.render(run, args.output_format))
    if args.output_format != "text":
        sys.stderr.write(gate_report.text(run))
    return run.exit_code


def verify_all(args: argparse.Namespace) -> list[TargetResult]:
    """Verify every target in turn (the parsed-arguments half of :func:`main`)."""
    settings = _settings(args)
    targets = _targets(args, settings)
    options = _run_options(args)
    show = _progress_printer()
    results = []
    for index, target in enumerate(targets, 1):
        lint_settings = lint_settings_for(target, settings, args)
        scope = _scope(target, args)
        fix = (
            ReferencedTransform(args.transform, str(Path.cwd()))
            if args.transform
            else LinterTransform(lint_settings, bool(lint_settings.unsafe_fixes))
        )
        show(f"{target.text} ({index}/{len(targets)}): scope {', '.join(scope)}")
        result = verify_target(
            target,
            original=ArmPlan(scope, identity),
            fixed=ArmPlan(scope, fix),
            options=options,
            lint_settings=None if args.no_reconcile else lint_settings,
            progress=_prefixed(show, target.text),
        )
        show(f"{target.text}: {result.status.upper()}{': ' + result.detail if result.detail else ''}")
        results.append(result)
    return results


def exit_code(results: Sequence[TargetResult]) -> int:
    if any(r.status == ERROR for r in results):
        return EXIT_ERROR
    return EXIT_PASS if all(r.status == PASS for r in results) else EXIT_FAIL


def main(argv: list[str]) -> int:
    """Entry point dispatched by ``graphmend-lint verify``."""
    args = build_parser().parse_args(argv)
    try:
        _check_gate_options(args)
        if args.baseline or args.write_baseline:
            return gate_main(args)
        if args.plot:
            require_matplotlib()  # fail in a second, not after minutes of compiling
        results = verify_all(args)
    except (UsageError, TargetError, ConfigError, PlotUnavailable, BaselineError) as error:
        print(f"graphmend-lint verify: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    from graphmend_lint.verify import report

    bench = args.bench
    sys.stdout.write(report.terminal(results, bench))
    if args.json:
        report.write_json(results, Path(args.json))
    if args.markdown:
        Path(args.markdown).write_text(report.markdown(results, bench), encoding="utf-8")
    if args.plot:
        from graphmend_lint.verify.plot import plot

        plot(results, Path(args.plot))
    return exit_code(results)
