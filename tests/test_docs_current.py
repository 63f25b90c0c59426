"""The generated reference docs match the code, and the generator itself is sound."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest
import tomllib
from conftest import REPO, run_cli

from graphmend_lint import cli, docs_examples, docs_gen
from graphmend_lint.config import OPTIONS, settings_from_table
from graphmend_lint.docs import docstring_sections, rule_markdown
from graphmend_lint.rules import Rule, RuleOption, rule_by_code

FIX_COMMAND = f"run `{docs_gen.COMMAND}` and commit the result"


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    return docs_gen.generated_files(REPO)


def test_committed_docs_are_current(generated: dict[Path, str]) -> None:
    outdated = [path.as_posix() for path in docs_gen.outdated_files(REPO, generated)]
    stale = [path.as_posix() for path in docs_gen.stale_files(REPO, generated)]
    assert not outdated, f"out of date: {', '.join(outdated)}; {FIX_COMMAND}"
    assert not stale, f"pages of rules that no longer exist: {', '.join(stale)}; {FIX_COMMAND}"


def test_rule_command_prints_the_committed_page() -> None:
    completed = run_cli("rule", "GM201", cwd=REPO)
    assert completed.code == 0, completed.err
    assert completed.out == (REPO / "docs/rules/GM201.md").read_text(encoding="utf-8")


def test_every_builtin_rule_has_a_page_and_an_index_row(generated: dict[Path, str]) -> None:
    index = generated[docs_gen.RULES_DOCS / "index.md"]
    for rule in docs_gen.builtin_rules():
        page = generated[docs_gen.RULES_DOCS / f"{rule.code}.md"]
        assert page.startswith(f"# {rule.code}: {rule.name}\n")
        assert f"| [{rule.code}]({rule.code}.md) | `{rule.name}` |" in index
        for gb_id in rule.dynamo_gb:
            assert f"### [{gb_id}](" in page and "Dynamo explains: " in page, f"{rule.code}: no registry text"


def test_every_config_key_and_flag_is_documented(generated: dict[Path, str]) -> None:
    configuration = generated[Path("docs/configuration.md")]
    for option in OPTIONS:
        assert f"### `{option.key}`" in configuration
    assert "### `targets`" in configuration
    reference = generated[Path("docs/cli.md")]
    verify = docs_gen.verify_parser()
    parsers = [cli.build_parser(), *([verify] if verify is not None else [])]
    for parser in parsers:
        for action in parser._actions:
            for flag in action.option_strings:
                assert f"`{flag}" in reference or f", {flag}" in reference, f"{parser.prog} {flag}"


def test_configuration_example_is_a_valid_config() -> None:
    table = tomllib.loads(docs_gen.EXAMPLE_CONFIG)["tool"]["graphmend-lint"]
    settings = settings_from_table(table, REPO / "pyproject.toml")
    assert settings.scope == "modules" and settings.per_file_ignores == (("tests/*", ("GM201",)),)


def test_check_mode_reports_edits_and_stale_pages_and_write_mode_repairs_them(
    tmp_path: Path, generated: dict[Path, str]
) -> None:
    (tmp_path / docs_gen.EXCERPT).parent.mkdir(parents=True)
    (tmp_path / docs_gen.EXCERPT).write_text(generated[docs_gen.EXCERPT])  # the fallback when torch is absent
    assert docs_gen.main(["--root", str(tmp_path)]) == 0
    assert docs_gen.main(["--root", str(tmp_path), "--check"]) == 0
    (tmp_path / "docs/cli.md").write_text("hand-edited\n")
    (tmp_path / "docs/rules/GM999.md").write_text("# a rule that was removed\n")
    assert docs_gen.main(["--root", str(tmp_path), "--check"]) == 1
    assert docs_gen.main(["--root", str(tmp_path)]) == 0
    assert not (tmp_path / "docs/rules/GM999.md").exists()
    assert (tmp_path / "docs/cli.md").read_text() == generated[Path("docs/cli.md")]


def test_hint_fragments_split_by_string_concatenation_are_rejoined() -> None:
    hints = ["If you call `print`, ", "try this.", "Report it.", "dangling "]
    assert docs_gen.merge_hint_fragments(hints) == ["If you call `print`, try this.", "Report it.", "dangling"]


def test_registry_entry_prefers_prose_with_hints_and_rejects_a_wrong_gb_type() -> None:
    entries = [
        {"Gb_type": "Data-dependent branching", "Explanation": '"Detected " + info', "Hints": ["h"]},
        {"Gb_type": "Data-dependent branching", "Explanation": "Detected branching.", "Hints": []},
        {"Gb_type": "Data-dependent branching", "Explanation": "Detected branching.", "Hints": ["Use torch.cond."]},
        {"Gb_type": "Other", "Explanation": "Something else.", "Hints": ["x"]},
    ]
    chosen = docs_gen.select_entry("GB0170", entries, "Data-dependent branching")
    assert chosen["Hints"] == ["Use torch.cond."]
    with pytest.raises(docs_gen.GenerationError, match="not 'Typo'"):
        docs_gen.select_entry("GB0170", entries, "Typo")


def test_cli_reference_does_not_depend_on_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    wide = docs_gen.cli_markdown(cli.build_parser())
    monkeypatch.setenv("COLUMNS", "40")
    assert docs_gen.cli_markdown(cli.build_parser()) == wide


def test_cli_reference_needs_a_description_for_every_subcommand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "SUBCOMMANDS", (*cli.SUBCOMMANDS, "explain"))
    with pytest.raises(docs_gen.GenerationError, match="explain"):
        docs_gen.cli_markdown(argparse.ArgumentParser(prog="graphmend-lint"))


class _DocumentedRule(Rule):
    """## What it does
    Flags `thing()`.

    ## Example
    ```python
    ## a comment that looks like a heading
    thing()
    ```

    ## Known limitations
    Misses aliases.
    """

    code = "GM999"
    name = "thing-call"
    summary = "`thing()` breaks the graph"
    options: ClassVar[Mapping[str, RuleOption]] = {
        "names": RuleOption(("thing",), "what to look for"),
        "strict": RuleOption(False, "also flag the doubtful cases"),
    }

    def check(self, ctx):  # type: ignore[no-untyped-def]
        return iter(())


def test_rule_page_sections_options_and_extra_sections() -> None:
    assert list(docstring_sections(_DocumentedRule)) == ["What it does", "Example", "Known limitations"]
    page = rule_markdown(_DocumentedRule, registry={}, catalog=REPO / "no-such-catalog")
    assert "## a comment that looks like a heading" in page  # code, not a section
    assert page.index("## Example") < page.index("## Known limitations") < page.index("## Options")
    assert '| `names` | list of strings | `["thing"]` | what to look for |' in page
    assert "| `strict` | bool | `false` | also flag the doubtful cases |" in page
    assert "rules/GM999/" in page  # no catalog on disk: the page links to the repository's


def test_catalog_pair_is_embedded_as_example_and_fix(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "GM201"
    folder.mkdir(parents=True)
    (folder / "bad_a.py").write_text("print('bad a')\n")
    (folder / "bad_b.py").write_text("print('bad b')\n")
    (folder / "fixed_b.py").write_text("pass  # fixed b\n")
    rule = rule_by_code("GM201")
    assert rule is not None
    page = rule_markdown(rule, registry={}, catalog=tmp_path / "rules")
    example, use_instead = page.split("## Use instead")
    assert "print('bad b')" in example and "print('bad a')" not in example
    assert "pass  # fixed b" in use_instead.split("## Fix safety")[0]
    assert "- [`rules/GM201/bad_a.py`](../../rules/GM201/bad_a.py)\n" in page
    assert "- [`rules/GM201/bad_b.py`](../../rules/GM201/bad_b.py), fixed in [`rules/GM201/fixed_b.py`]" in page


def test_examples_are_real_runs_and_stale_output_is_replaced(tmp_path: Path) -> None:
    page = (
        "<!-- example-file: m.py -->\n```python\nimport torch\n\n\n@torch.compile\ndef f(x):\n"
        "    print(x)\n    return x * 2\n```\n\n"
        "<!-- example-run: graphmend-lint m.py -->\n```console\n$ graphmend-lint m.py\nAll checks passed!\n```\n\n"
        "<!-- example-run: graphmend-lint --diff --unsafe-fixes m.py -->\n```diff\nstale\n```\n"
    )
    rendered = docs_examples.render(page, REPO)
    assert "$ graphmend-lint m.py\nm.py:6:5: GM201 `print()` in compiled code causes a graph break\n" in rendered
    assert "All checks passed!" not in rendered and "stale" not in rendered
    assert "```diff\n--- a/m.py\n+++ b/m.py\n" in rendered  # a non-console block holds the output alone
    assert docs_examples.render(rendered, REPO) == rendered


def test_an_example_must_be_a_known_command() -> None:
    with pytest.raises(docs_examples.ExampleError, match="only graphmend-lint, flake8"):
        docs_examples.render("<!-- example-run: rm -rf / -->\n```console\n```\n", REPO)


def test_every_example_page_has_examples_and_its_files() -> None:
    for relative in docs_examples.PAGES:
        text = (REPO / relative).read_text(encoding="utf-8")
        assert "<!-- example-run: graphmend-lint " in text, relative
        assert docs_examples.example_files(text), relative


@pytest.mark.dynamo
def test_the_verify_example_in_the_index_is_current(tmp_path: Path) -> None:
    """Reruns the index page's `graphmend-lint verify` example (minutes): its table must be the committed one."""
    pytest.importorskip("torch")
    page = REPO / "docs/index.md"
    text = page.read_text(encoding="utf-8")
    assert docs_examples.render(text, REPO, run_verify=True, plot_dir=tmp_path) == text, (
        f"docs/index.md's verify example is out of date; run `{docs_gen.COMMAND} --with-verify`"
    )
    assert (tmp_path / "verify-before-after.png").is_file()


def test_readme_configuration_example_is_a_valid_config() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Configuration", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    table = tomllib.loads(block)["tool"]["graphmend-lint"]
    settings = settings_from_table(table, REPO / "pyproject.toml")
    assert settings.scope == "modules" and settings.options_for("GM202")
