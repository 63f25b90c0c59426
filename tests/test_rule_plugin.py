"""Third-party rules: a tiny package installed with pip registers a rule through the entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, run_cli, write

from graphmend_lint.docs import rule_markdown
from graphmend_lint.rules import Rule, all_rules

PLUGIN_RULE = '''
"""A third-party rule: flags `torch.manual_seed` inside compiled code."""

from astroid import nodes

from graphmend_lint.rules import Example, Rule


class ManualSeedInCompiledScope(Rule):
    """## What it does
    Flags `torch.manual_seed(...)` in traced code.

    ## Why is this bad
    Reseeding inside a compiled function is almost never what you meant.

    ## Example
    `torch.manual_seed(0)` inside `@torch.compile`.

    ## Fix safety
    No fix.
    """

    code = "ACM001"
    name = "manual-seed-in-compiled-scope"
    summary = "`torch.manual_seed` in compiled code"
    invalid = (Example("import torch\\n@torch.compile\\ndef f(x):\\n    torch.manual_seed(0)\\n    return x\\n"),)

    def check(self, ctx):
        for call, traced in ctx.traced_nodes(nodes.Call):
            if ctx.values.qualified_name(call.func) == "torch.manual_seed":
                yield ctx.report(call, "do not reseed inside compiled code", traced)
'''

PYPROJECT = """
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-graphmend-rules"
version = "0.1.0"

[project.entry-points."graphmend_lint.rules"]
acme = "acme_rules"
"""


def test_pip_installed_plugin_rule_is_listed_and_runs(tmp_path: Path) -> None:
    package = tmp_path / "plugin"
    write(package, "acme_rules/__init__.py", PLUGIN_RULE)
    write(package, "pyproject.toml", PYPROJECT)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(package)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {"PYTHONPATH": os.pathsep.join([str(target), str(REPO)])}
    project = tmp_path / "project"
    # GM204 flags the same call since it learned torch.manual_seed; the plugin's own finding is what is checked
    write(project, "pyproject.toml", '[tool.graphmend-lint]\nignore = ["GM204"]\n')
    write(project, "model.py", textwrap.dedent(
        """
        import torch

        @torch.compile
        def f(x):
            torch.manual_seed(0)
            return x * 2
        """
    ))
    listing = run_cli("rules", cwd=project, env=env)
    assert "ACM001" in listing.out and "manual-seed-in-compiled-scope" in listing.out
    result = run_cli("model.py", "--output-format", "json", "--no-cache", cwd=project, env=env)
    assert result.code == 1, result.err
    assert [(r["code"], r["location"]["row"]) for r in json.loads(result.out)] == [("ACM001", 5)]
    ignored = run_cli("model.py", "--ignore", "ACM,GM204", "--no-cache", cwd=project, env=env)
    assert ignored.code == 0


def test_broken_plugin_fails_with_a_clear_message(tmp_path: Path) -> None:
    package = tmp_path / "plugin"
    write(package, "broken_rules/__init__.py", "raise ImportError('missing dependency of the plugin')\n")
    write(package, "pyproject.toml", PYPROJECT.replace("acme-graphmend-rules", "broken-rules").replace(
        'acme = "acme_rules"', 'broken = "broken_rules"'))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(package)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {"PYTHONPATH": os.pathsep.join([str(target), str(REPO)])}
    result = run_cli("rules", cwd=tmp_path, env=env)
    assert result.code == 2
    assert "rule plugin 'broken'" in result.err and "missing dependency of the plugin" in result.err
    assert "Traceback" not in result.err


def test_an_option_without_its_meaning_is_rejected_with_the_rule_named() -> None:
    class Bare(Rule):
        code = "ACM002"
        name = "bare-option"
        summary = "an option given as a bare default"
        options = {"strict": False}

        def check(self, ctx):
            return iter(())

    with pytest.raises(TypeError, match=r"ACM002: option `strict` must be a RuleOption"):
        Bare.validate_definition()


def test_shipped_rules_document_every_option() -> None:
    for rule in all_rules():
        page = rule_markdown(rule)
        assert page.count("## Options") == (1 if rule.options else 0), rule.code
        for key, option in rule.options.items():
            assert option.meaning.strip() and f"| `{key}` |" in page and option.meaning in page, (rule.code, key)
