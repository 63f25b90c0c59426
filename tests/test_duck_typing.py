"""Duck typing of untyped parameters: the one local class that has every attribute a function reads on one.

TimesFM's ``Attention.forward(self, x, decode_cache)`` slices its cache with
``decode_cache.next_index[0]``, a tensor ``DecodeCache.__init__`` assigns
(GB0124 logged at the slice, measured in the corpus program
``issue_timesfm_459_decode_cache_tensor_slice``). Nothing annotates or passes
``decode_cache`` in the file; only the attributes read on it say what it is.
"""

from __future__ import annotations

import ast

import pytest
from value_probes import kinds_of

from graphmend_lint.analysis.duck_typing import DuckTyping
from graphmend_lint.analysis.imports import ImportTable
from graphmend_lint.analysis.module_index import ModuleIndex
from graphmend_lint.analysis.scope import analyze_scope
from graphmend_lint.analysis.values import Kind

CLASSES = """
import torch
from torch import nn


class DecodeCache:
    def __init__(self, batch, size):
        self.next_index = torch.zeros(batch, dtype=torch.long)
        self.key = torch.zeros(batch, size)
        self.batch = batch

    def advance(self, n):
        self.next_index += n


class Plan:
    def __init__(self):
        self.steps = 3
        self.key = None


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
"""


def duck_classes(source: str, function: str, parameter: str) -> tuple[str, ...]:
    tree = ast.parse(source)
    return DuckTyping(ModuleIndex.build(tree, source), ImportTable.from_tree(tree, "case")).classes(function, parameter)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return cache.key[:, cache.next_index[0]]", ("DecodeCache",)),
        ("cache.advance(1)\n    return x", ("DecodeCache",)),  # a method, and a name no builtin value has
        ("return cache.key + x", ()),  # ``key``: DecodeCache and Plan both have it
        ("return cache.shape, cache.view(-1)", ()),  # tensor attributes: ``cache`` may be a tensor
        ("cache.append(x)\n    return cache.keys()", ()),  # a list's or dict's: says nothing
        ("return cache.missing", ()),  # no class has it
        ("cache = cache or DecodeCache(1, 2)\n    return cache.next_index", ()),  # rebound
        ("if hasattr(cache, 'next_index'):\n        return cache.next_index\n    return x", ()),  # asks what it got
        ("return getattr(cache, 'next_index')", ()),  # a read through a string does not count
        ("return (lambda: cache.next_index)()", ()),  # another scope uses it
    ],
    ids=["two-names", "method", "ambiguous", "tensor-names", "builtin-names", "unknown-name", "rebound",
         "hasattr", "getattr-string", "nested-scope"],
)  # fmt: skip
def test_only_one_class_with_every_attribute_read_types_the_parameter(body: str, expected: tuple[str, ...]) -> None:
    source = CLASSES + f"\n\ndef step(x, cache):\n    {body}\n"
    assert duck_classes(source, "step", "cache") == expected


def test_a_method_called_with_more_arguments_than_a_containers_takes_rules_the_containers_out() -> None:
    """InternLM's ``metric.update(logits, labels, type_ids)``: ``dict.update`` takes one argument, so the
    parameter is the file's one class with an ``update`` method; ``metric.update(other)`` stays open."""
    source = CLASSES + (
        "\n\nclass Metric:\n    def update(self, logits, labels):\n        self.n = labels.numel()\n\n\n"
        "def step(x, metric):\n    metric.update(x, x > 0)\n    return x\n\n\n"
        "def other(x, metric):\n    metric.update(x)\n    return x\n"
    )
    assert duck_classes(source, "step", "metric") == ("Metric",)
    assert duck_classes(source, "other", "metric") == ()


def test_a_parameter_the_function_calls_holds_no_tensor() -> None:
    """nnAudio: ``X = layer(x)`` then ``layer.inverse(X)``. A tensor has ``inverse`` too, but a tensor is not
    called; a parameter only read (``t.inverse()``) may still be one."""
    source = CLASSES + (
        "\n\nclass STFT(nn.Module):\n    def inverse(self, X):\n        return X\n\n\n"
        "def step(x, layer):\n    X = layer(x)\n    return layer.inverse(X)\n\n\n"
        "def other(x, t):\n    return t.inverse()\n"
    )
    assert duck_classes(source, "step", "layer") == ("STFT",)
    assert duck_classes(source, "other", "t") == ()


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("step(x, cache=None)", ("DecodeCache",)),
        ("step(x, cache=DEFAULT)", ()),  # a default says what it holds
        ("step(x, cache: 'Plan')", ()),  # so does an annotation
    ],
)
def test_defaults_and_annotations_come_first(signature: str, expected: tuple[str, ...]) -> None:
    source = CLASSES + f"\n\ndef {signature}:\n    return cache.next_index\n"
    assert duck_classes(source, "step", "cache") == expected


def test_a_base_and_its_local_subclasses_are_one_family_and_imported_bases_may_have_anything() -> None:
    family = CLASSES + "\n\nclass SlidingCache(DecodeCache):\n    pass\n\n\ndef step(cache):\n    return cache.next_index\n"
    assert duck_classes(family, "step", "cache") == ("DecodeCache", "SlidingCache")
    # ``OtherCache`` has ``next_index`` too and may inherit ``batch`` from the imported base: no answer
    imported = CLASSES.replace("import torch\n", "import torch\nfrom elsewhere import Base\n") + (
        "\n\nclass OtherCache(Base):\n    def __init__(self):\n        self.next_index = 0\n\n\n"
        "def step(cache):\n    return cache.next_index, cache.batch\n"
    )
    assert duck_classes(imported, "step", "cache") == ()
    # an ``nn.Module`` subclass has the module's attributes, and no others
    module = CLASSES + "\n\ndef step(layer, x):\n    return layer.proj(x) if layer.training else x\n"
    assert duck_classes(module, "step", "layer") == ("Layer",)
    # a class copying its configuration onto ``self`` is not its ``__init__``'s configuration
    assert duck_classes(CLASSES, "DecodeCache.__init__", "batch") == ()



FORWARD = CLASSES + """

class Attention(nn.Module):
    def forward(self, x, decode_cache):
        probe(decode_cache.next_index[0], decode_cache.key, decode_cache.batch)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, decode_cache):
        return self.attn(x, {argument})


model = torch.compile(Model())
"""


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        # the caller passes its own parameter on: the attributes read decide. ``batch`` is what the
        # constructor was passed, which no call here shows
        ("decode_cache", {"decode_cache.next_index[0]": Kind.TENSOR, "decode_cache.key": Kind.TENSOR}),
        ("DecodeCache(1, 4)",  # built here: the call says what ``batch`` is too
         {"decode_cache.next_index[0]": Kind.TENSOR, "decode_cache.key": Kind.TENSOR, "decode_cache.batch": Kind.STATIC}),
        ("Plan()", {"decode_cache.key": Kind.STATIC}),  # the call wins: a ``Plan``, whose ``key`` is None
        ("3", {}),  # a literal: not an instance of a local class
        ("make_cache()", {}),  # what an unknown function returns
    ],
    ids=["passed-on", "constructed", "call-site-class-wins", "literal", "unknown-call"],
)
def test_a_forward_parameter_takes_its_attributes_from_the_duck_typed_class(
    argument: str, expected: dict[str, Kind]
) -> None:
    kinds = kinds_of(FORWARD.replace("{argument}", argument))
    known = {text: kind for text, kind in kinds.items() if kind is not Kind.UNKNOWN}
    assert known == expected


def test_scope_follows_method_calls_into_the_duck_typed_class() -> None:
    source = CLASSES + "\n\n@torch.compile\ndef step(x, cache):\n    cache.advance(x.shape[0])\n    return cache.key\n"
    traced = {f.qualname for f in analyze_scope(ast.parse(source), ImportTable.from_tree(ast.parse(source), "c"), "c.py").functions}
    assert traced == {"step", "DecodeCache.advance"}
    called_with_a_plan = source + "\nstep(torch.ones(2), Plan())\n"
    tree = ast.parse(called_with_a_plan)
    traced = {f.qualname for f in analyze_scope(tree, ImportTable.from_tree(tree, "c"), "c.py").functions}
    assert traced == {"step"}  # the call says ``Plan``, which has no ``advance``


def test_a_duck_typed_parameter_is_no_tensor_whatever_tensor_methods_it_shares() -> None:
    """TAPAS's ``gather(values, index)`` reads ``index.indices`` (a tensor method's name too) and
    ``index.batch_dims``: only its ``IndexMap`` has both, so ``index`` is no tensor and ``if index:`` no break."""
    source = (
        "import torch\n\n\nclass IndexMap:\n    def __init__(self, indices, batch_dims=0):\n"
        "        self.indices = torch.as_tensor(indices)\n        self.batch_dims = batch_dims\n\n\n"
        "@torch.compile\ndef gather_cells(values, index):\n    probe(index, index.indices)\n"
        "    return values.gather(index.batch_dims, index.indices)\n"
    )
    assert kinds_of(source) == {"index": Kind.UNKNOWN, "index.indices": Kind.TENSOR}
    untyped = source.replace("        self.batch_dims = batch_dims\n", "")  # ``batch_dims`` names no local class's
    assert kinds_of(untyped)["index"] is Kind.UNKNOWN  # ... and no tensor's: ``index`` holds something else
    only_indices = untyped.replace("index.batch_dims", "0")
    assert kinds_of(only_indices)["index"] is Kind.TENSOR  # ``index.indices`` alone: the name of a tensor method


def test_an_attribute_no_tensor_has_is_evidence_against_a_tensor() -> None:
    """minimind's ``generate`` calls ``streamer.put(ids)`` (``Tensor.put`` exists) and ``streamer.end()``
    (no tensor has ``end``): ``streamer`` is no tensor, so ``if streamer:`` is no tensor branch."""
    source = (
        "import torch\n\n\n@torch.compile\ndef generate(ids, streamer=None):\n"
        "    if streamer:\n        streamer.put(ids)\n    probe(streamer)\n"
        "    if streamer:\n        streamer.end()\n    return ids\n"
    )
    assert kinds_of(source)["streamer"] is Kind.UNKNOWN
    assert kinds_of(source.replace("streamer.end()", "streamer.sum()"))["streamer"] is Kind.TENSOR
    # rebound before the ``end()``: that read is of another object, and says nothing of the parameter
    rebound = source.replace("        streamer.end()\n", "        streamer = Streamer()\n        streamer.end()\n")
    assert kinds_of(rebound)["streamer"] is Kind.TENSOR
