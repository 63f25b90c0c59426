"""The command line: argument parsing, exit codes and printing. No analysis here.

Exit codes follow ruff in every mode (``--diff`` and standard input
included): 0 when nothing is left, 1 when findings remain or a path could not
be checked or fixed, 2 for usage, configuration and internal errors.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from graphmend_lint import __version__
from graphmend_lint.add_noqa import add_noqa
from graphmend_lint.baseline import BaselineError, Key, drop_baselined, keyed, read_baseline, texts_of, write_baseline
from graphmend_lint.config import OUTPUT_FORMATS, SCOPES, ConfigError, Settings, cli_codes, load_settings, with_overrides
from graphmend_lint.diagnostics import Applicability
from graphmend_lint.docs import RULE_PAGE_URL
from graphmend_lint.engine import FileReport, RunReport, run
from graphmend_lint.notebook import NOTEBOOK_SUFFIX
from graphmend_lint.output import render
from graphmend_lint.output.report import Report, one_based
from graphmend_lint.pipeline import SYNTAX_ERROR_CODE, analyze, fix
from graphmend_lint.rules import RuleLoadError, all_rules, rule_by_code
from graphmend_lint.source import DecodeError, SourceFile

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "rule", "rules", "server", "verify")


def positive_int(text: str) -> int:
    """argparse type for counts such as ``--jobs``: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``check`` parser; ``docs/cli.md`` is generated from it."""
    parser = argparse.ArgumentParser(
        prog="graphmend-lint",
        description="Find and fix torch.compile graph breaks before they happen.",
        epilog="Other commands: `graphmend-lint rules`, `graphmend-lint rule CODE`, `graphmend-lint verify TARGET...`, "
        "`graphmend-lint server` (language server).",
    )
    parser.add_argument("--version", action="version", version=f"graphmend-lint {__version__}")
    parser.add_argument(
        "paths", nargs="*", metavar="PATH",
        help="files (Python or .ipynb notebooks) or directories to lint (default: .); `-` reads stdin"
    )
    fixing = parser.add_argument_group("fixing")
    fixing.add_argument("--fix", action="store_true", default=None, help="apply safe fixes")
    fixing.add_argument("--no-fix", dest="fix", action="store_false", help="do not apply fixes")
    fixing.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply unsafe fixes")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    fixing.add_argument("--show-fixes", action="store_true", help="list the fixes that were applied")
    fixing.add_argument(
        "--verify",
        action="store_true",
        help="with --fix: run the [tool.graphmend-lint.verify] targets and roll back the fixes of files "
        "whose breaks did not go down or whose outputs changed",
    )
    adopting = parser.add_argument_group("adopting on existing code")
    adopting.add_argument(
        "--add-noqa",
        action="store_true",
        help="add `# noqa: CODE` to every line with a finding, merging with an existing `# noqa`; "
        "with --diff print the changes instead of writing them",
    )
    adopting.add_argument(
        "--write-baseline", metavar="FILE", help="write every current finding to a JSON baseline file"
    )
    adopting.add_argument(
        "--baseline",
        metavar="FILE",
        help="report (and count for the exit code) only findings that are not in this baseline file",
    )
    selection = parser.add_argument_group("rule selection")
    selection.add_argument("--select", action="append", metavar="CODES", help="comma-separated codes or prefixes, or ALL")
    selection.add_argument("--extend-select", action="append", metavar="CODES", help="codes to add to the selection")
    selection.add_argument("--ignore", action="append", metavar="CODES", help="codes or prefixes to ignore")
    files = parser.add_argument_group("file selection")
    files.add_argument("--exclude", action="append", metavar="GLOB", help="replace the default excludes")
    files.add_argument("--extend-exclude", action="append", metavar="GLOB", help="exclude more files")
    files.add_argument(
        "--force-exclude", action="store_true", default=None, help="apply excludes to files named explicitly too"
    )
    files.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="read the source from stdin (as the path `-` does) and report it as NAME; with --fix the fixed "
        "source goes to stdout and the remaining findings to stderr",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--output-format", choices=OUTPUT_FORMATS, help="how to print findings (default: concise)")
    output.add_argument("--statistics", action="store_true", help="print counts per rule instead of findings")
    output.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    running = parser.add_argument_group("run")
    running.add_argument("--config", metavar="FILE", help="use this pyproject.toml or graphmend-lint.toml")
    running.add_argument("--scope", choices=SCOPES, help="what counts as traced code (default: compiled)")
    running.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="worker processes (default: CPU count)")
    running.add_argument("--no-cache", action="store_true", help="do not read or write .graphmend_cache/")
    return parser


def _settings_for(args: argparse.Namespace) -> Settings:
    first_path = args.paths[0] if args.paths and args.paths[0] != "-" else "."
    start = Path(args.stdin_filename or first_path).absolute()
    settings = load_settings(Path(args.config) if args.config else None, start if start.exists() else Path.cwd())
    return with_overrides(
        settings,
        select=cli_codes(args.select, "--select"),
        extend_select=cli_codes(args.extend_select, "--extend-select"),
        ignore=cli_codes(args.ignore, "--ignore"),
        exclude=tuple(args.exclude) if args.exclude else None,
        extend_exclude=tuple(args.extend_exclude) if args.extend_exclude else None,
        force_exclude=args.force_exclude,
        unsafe_fixes=args.unsafe_fixes,
        scope=args.scope,
        output_format=args.output_format,
    )


def _unified_diff(path: str, old: str | None, new: str | None) -> str:
    if old is None or new is None:
        return ""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


def _render(settings: Settings, args: argparse.Namespace, result: RunReport) -> str:
    remaining = result.diagnostics
    hidden = sum(
        1
        for d in remaining
        if d.fix is not None and d.fix.applicability is Applicability.UNSAFE and not settings.unsafe_fixes
    )
    rules = all_rules()
    report = Report(
        diagnostics=tuple(remaining),
        fixed_count=len(result.applied),
        hidden_unsafe_fixes=hidden,
        applied=tuple(result.applied),
        show_fixes=args.show_fixes,
        statistics=args.statistics,
        quiet=args.quiet,
        unsafe_fixes=settings.unsafe_fixes,
        rule_urls={rule.code: RULE_PAGE_URL.format(code=rule.code) for rule in rules},
        rule_names={rule.code: rule.name for rule in rules},
        sources={f.path: f.source for f in result.files if f.source is not None},
        cell_sources={(f.path, number): text for f in result.files for number, text in f.cell_sources.items()},
        tool_version=__version__,
        unchecked=len(result.unchecked),
        unfixed=len(result.unfixed),
        skipped=len(result.skipped),
    )
    return render(settings.output_format, report)


class UsageError(Exception):
    """A combination of arguments that cannot work; exit 2 with the message."""


def _stdin_name(args: argparse.Namespace) -> str | None:
    """The name standard input is reported under, or None when files are linted.

    ``-`` as the only path reads standard input, as in ruff; ``--stdin-filename``
    names it (and implies reading it).
    """
    reads_stdin = "-" in args.paths or args.stdin_filename is not None
    if reads_stdin and any(path != "-" for path in args.paths):
        raise UsageError("`-` and --stdin-filename read standard input and take no other paths")
    if reads_stdin and args.verify:
        raise UsageError("--verify works on files, not on standard input")
    return (args.stdin_filename or "-") if reads_stdin else None


#: The modes ``--add-noqa`` and ``--write-baseline`` cannot share a run with: they record findings on files.
ADOPTION_CONFLICTS = {
    "--add-noqa": ("--fix", "--verify", "--write-baseline", "--baseline"),
    "--write-baseline": ("--fix", "--diff", "--verify", "--baseline"),
}


def _check_adoption_flags(args: argparse.Namespace, stdin_name: str | None) -> None:
    def given(flag: str) -> bool:
        return bool(getattr(args, flag.lstrip("-").replace("-", "_")))

    for flag, conflicts in ADOPTION_CONFLICTS.items():
        if not given(flag):
            continue
        if stdin_name is not None:
            raise UsageError(f"{flag} works on files, not on standard input")
        clash = [name for name in conflicts if given(name)]
        if clash:
            raise UsageError(f"{flag} cannot be combined with {', '.join(clash)}")


def _check(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        stdin_name = _stdin_name(args)
        settings = _settings_for(args)
        if args.verify and (not args.fix or args.diff):
            raise UsageError("--verify needs --fix (and not --diff)")
        if args.verify and not settings.verify_targets:
            raise UsageError("--verify needs targets under [tool.graphmend-lint.verify]")
        _check_adoption_flags(args, stdin_name)
        baseline = read_baseline(Path(args.baseline)) if args.baseline else None
    except (ConfigError, UsageError, BaselineError) as error:
        print(f"graphmend-lint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    if args.add_noqa:
        return _add_noqa(args, settings)
    if args.write_baseline:
        return _write_baseline(args, settings)
    fixing = bool(args.fix) or args.diff
    if stdin_name is not None:
        result = _lint_stdin(stdin_name, settings, fixing)
    else:
        result = run(
            args.paths or ["."],
            settings,
            fix=fixing,
            unsafe=settings.unsafe_fixes,
            write=not args.diff,
            jobs=args.jobs,
            use_cache=not args.no_cache,
        )
    verify_failed = args.verify and _verify_fixes(result, args, settings)
    hidden = drop_baselined(result, baseline, settings.root) if baseline is not None else 0
    _print_file_problems(result)
    if args.diff:
        return _show_diff(result, args.exit_zero)
    output = _render(settings, args, result)
    if stdin_name is not None and args.fix:
        # The fixed text is the output, as in ruff; what remains goes to stderr.
        report = result.files[0]
        sys.stdout.write(report.fixed_source if report.fixed_source is not None else report.source or "")
        _write_terminated(sys.stderr, output)
    else:
        _write_terminated(sys.stdout, output)
    if hidden and not args.quiet:
        sys.stdout.flush()
        print(f"graphmend-lint: note: {hidden} finding{_plural(hidden)} in the baseline {args.baseline} not shown",
              file=sys.stderr)
    return EXIT_ERROR if verify_failed else _exit_code(result, args.exit_zero)


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


def _lint_files(args: argparse.Namespace, settings: Settings) -> RunReport:
    """A plain lint of the command line's paths (no fixes), for ``--add-noqa`` and ``--write-baseline``."""
    return run(args.paths or ["."], settings, jobs=args.jobs, use_cache=not args.no_cache)


def _add_noqa(args: argparse.Namespace, settings: Settings) -> int:
    """``--add-noqa``: exit 0 when every finding got a directive, 1 when some could not or a file failed."""
    result = _lint_files(args, settings)
    added = add_noqa(result, settings, write=not args.diff)
    _print_file_problems(result)
    for diagnostic in added.skipped:
        line, column = one_based(diagnostic.start)
        print(f"graphmend-lint: warning: {diagnostic.path}:{line}:{column}: {diagnostic.code}: the line cannot "
              "take a comment (it ends inside a multi-line string or with a backslash); no noqa added",
              file=sys.stderr)
    for message in added.errors:
        print(f"graphmend-lint: error: {message}", file=sys.stderr)
    if args.diff:
        sys.stdout.write("".join(_unified_diff(path, *texts) for path, texts in added.texts.items()))
    else:
        print(f"Added {added.added} noqa directive{_plural(added.added)}.", file=sys.stderr)
    if result.internal_errors:
        return EXIT_ERROR
    failed = added.skipped or added.errors or result.all_errors or (args.diff and added.texts)
    return EXIT_FINDINGS if failed and not args.exit_zero else EXIT_CLEAN


def _write_baseline(args: argparse.Namespace, settings: Settings) -> int:
    """``--write-baseline``: exit 0 when written, 1 when some path could not be checked."""
    result = _lint_files(args, settings)
    _print_file_problems(result)
    texts = {where: text for f in result.files for where, text in texts_of(f).items()}
    found: list[Key] = [key for _, key in keyed(result.diagnostics, texts, settings.root)]
    try:
        count = write_baseline(Path(args.write_baseline), found)
    except BaselineError as error:
        print(f"graphmend-lint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    print(f"Wrote {count} finding{_plural(count)} to {args.write_baseline}.", file=sys.stderr)
    if result.internal_errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if result.all_errors and not args.exit_zero else EXIT_CLEAN


def _write_terminated(stream: TextIO, text: str) -> None:
    if text:
        stream.write(text if text.endswith("\n") else text + "\n")


def _print_file_problems(result: RunReport) -> None:
    """Skipped files, files not checked or not fixed, and internal errors, on stderr."""
    for message in result.skipped:
        print(f"graphmend-lint: note: {message}", file=sys.stderr)
    for message in result.all_errors:
        print(f"graphmend-lint: error: {message}", file=sys.stderr)
    for message in result.internal_errors:
        print(f"graphmend-lint: {message}", file=sys.stderr)


def _show_diff(result: RunReport, exit_zero: bool) -> int:
    """``--diff``: the diff on stdout; exit 1 when it is not empty or a file could not be checked.

    A file that does not parse has no diff, so its syntax error is printed
    on stderr: an empty diff must never read as "nothing to do" for it.
    """
    diffs = "".join(_unified_diff(f.path, f.source, f.fixed_source) for f in result.files)
    sys.stdout.write(diffs)
    syntax_errors = [d for d in result.diagnostics if d.code == SYNTAX_ERROR_CODE]
    for diagnostic in syntax_errors:
        line, column = one_based(diagnostic.start)
        print(f"graphmend-lint: error: {diagnostic.path}:{line}:{column}: {diagnostic.code} {diagnostic.message}",
              file=sys.stderr)
    if result.internal_errors:
        return EXIT_ERROR
    failed = diffs or syntax_errors or result.all_errors
    return EXIT_FINDINGS if failed and not exit_zero else EXIT_CLEAN


def _verify_fixes(result: RunReport, args: argparse.Namespace, settings: Settings) -> bool:
    """``--verify``: keep only fixes the verify targets back; True when verification could not run."""
    from graphmend_lint.verify.rollback import rollback_after_fix

    def progress(message: str) -> None:
        print(f"graphmend-lint: verify: {message}", file=sys.stderr, flush=True)

    verified = rollback_after_fix(
        result, args.paths or ["."], settings, jobs=args.jobs, use_cache=not args.no_cache, progress=progress
    )
    for line in verified.lines():
        print(f"graphmend-lint: verify: {line}", file=sys.stderr)
    for message in verified.errors:
        print(f"graphmend-lint: error: verify: {message}", file=sys.stderr)
    return bool(verified.errors)


def _exit_code(result: RunReport, exit_zero: bool) -> int:
    if result.internal_errors:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if result.diagnostics or result.all_errors else EXIT_CLEAN


def _lint_stdin(name: str, settings: Settings, fixing: bool) -> RunReport:
    """Standard input as a one-file run reported under *name* (nothing is written anywhere)."""
    report = FileReport(path=name)
    if name.endswith(NOTEBOOK_SUFFIX):
        report.errors.append(f"{name}: notebooks are linted from files, not from standard input")
        return RunReport(files=[report])
    try:
        source = SourceFile.from_bytes(sys.stdin.buffer.read())
    except DecodeError as error:
        report.errors.append(f"{name}: cannot decode: {error}")
        return RunReport(files=[report])
    report.source = source.text
    if fixing:
        fixed = fix(source, name, settings, settings.unsafe_fixes)
        report.diagnostics, report.applied = list(fixed.result.remaining), list(fixed.result.applied)
        report.internal_errors = fixed.outcome.internal_errors
        report.fix_errors = [fixed.error] if fixed.error else []
        report.fixed_source = fixed.result.source if fixed.result.source != source.text else None
    else:
        outcome = analyze(source, name, settings)
        report.diagnostics, report.internal_errors = outcome.diagnostics, outcome.internal_errors
    return RunReport(files=[report])


def _rules_table() -> int:
    rows = [("code", "name", "fix", "dynamo ids", "summary")]
    for rule in all_rules():
        rows.append((rule.code, rule.name, rule.fix_label(), ",".join(rule.dynamo_gb) or "-", rule.summary))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    return EXIT_CLEAN


def _rule_doc(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: graphmend-lint rule CODE", file=sys.stderr)
        return EXIT_ERROR
    rule = rule_by_code(argv[0])
    if rule is None:
        print(f"graphmend-lint: error: unknown rule {argv[0]!r}; see `graphmend-lint rules`", file=sys.stderr)
        return EXIT_ERROR
    from graphmend_lint.docs import rule_markdown

    sys.stdout.write(rule_markdown(rule))
    return EXIT_CLEAN


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = arguments[0] if arguments and arguments[0] in SUBCOMMANDS else "check"
    rest = arguments[1:] if arguments and arguments[0] in SUBCOMMANDS else arguments
    try:
        if command == "rules":
            return _rules_table()
        if command == "rule":
            return _rule_doc(rest)
        if command == "verify":
            from graphmend_lint.verify.cli import main as verify_main

            return verify_main(rest)
        if command == "server":
            from graphmend_lint.server.cli import main as server_main

            return server_main(rest)
        return _check(rest)
    except RuleLoadError as error:
        print(f"graphmend-lint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


if __name__ == "__main__":
    raise SystemExit(main())
