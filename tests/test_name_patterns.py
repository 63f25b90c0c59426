"""The attribute names a computed string can spell."""

from __future__ import annotations

import ast

import pytest

from graphmend_lint.analysis.name_patterns import name_pattern


@pytest.mark.parametrize(
    ("expression", "matches", "misses"),
    [
        ('"{}_reduction".format(kind)', ["pos_pair_reduction", "_reduction"], ["reduction", "pos_pair_reduction_x"]),
        ("f'_forward_{mode}'", ["_forward_train", "_forward_"], ["forward_train"]),
        ("'assert_sizes_' + kind", ["assert_sizes_pair"], ["assert_sizes"]),
        ("prefix + '_loss'", ["focal_loss"], ["loss_focal"]),
        ("'name'", ["name"], ["names"]),
    ],
)
def test_a_pattern_matches_what_the_string_can_spell(expression: str, matches: list[str], misses: list[str]) -> None:
    pattern = name_pattern(ast.parse(expression, mode="eval").body)
    assert pattern is not None
    assert all(pattern.fullmatch(name) for name in matches)
    assert not any(pattern.fullmatch(name) for name in misses)


@pytest.mark.parametrize("expression", ["name", "f'{a}{b}'", "'{}'.format(x)", "'ab' + name", "a + b", "'{'.format(x)", "3"])
def test_a_string_that_says_too_little_gives_no_pattern(expression: str) -> None:
    assert name_pattern(ast.parse(expression, mode="eval").body) is None
