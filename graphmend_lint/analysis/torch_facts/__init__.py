"""What torch's callables return, from a table generated ahead of time.

Rules need to know that ``x.sum()`` is a tensor while ``x.item()`` is a
Python number, but the linter must never import torch: it is slow to import,
it may not be installed where the linter runs, and importing user-facing
libraries while linting is how linters end up executing code. So
``generate.py`` reads torch's own type stubs with ``ast`` at development time
and ships the result as ``torch_facts.json``; this module only reads it.

Kinds are the strings in :data:`KINDS`. A name whose signatures disagree gets
``"mixed:<kind>|<kind>..."`` (members sorted); :func:`split_kind` turns either
form back into a set.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

#: Every kind a facts entry may name (alone or inside a ``mixed:`` kind).
KINDS = (
    "tensor",
    "bool",
    "int",
    "float",
    "number",
    "size",
    "dtype",
    "device",
    "tuple_tensor",
    "none",
    "other",
)
MIXED_PREFIX = "mixed:"
#: Shipped next to this module; ``generate.py`` writes it.
FACTS_PATH = Path(__file__).with_name("torch_facts.json")


def split_kind(kind: str) -> frozenset[str]:
    """The plain kinds a (possibly ``mixed:``) kind stands for."""
    if kind.startswith(MIXED_PREFIX):
        return frozenset(kind[len(MIXED_PREFIX) :].split("|"))
    return frozenset({kind})


@dataclass(frozen=True)
class TorchFacts:
    """The generated table, read-only.

    ``functions`` is keyed by qualified name (``torch.randn``,
    ``torch.nn.functional.relu``); ``tensor_methods`` and
    ``tensor_attributes`` by bare name, since a method call's receiver is
    only known to be *some* tensor. ``nn_modules`` maps each ``torch.nn``
    layer class to what its ``forward`` returns, ``module_attributes``
    covers module constants such as ``torch.float32``, and
    ``named_tuple_fields`` the fields of the named tuples ops like
    ``max(dim)`` return (``values``, ``indices``...).
    """

    torch_version: str
    functions: Mapping[str, str]
    tensor_methods: Mapping[str, str]
    tensor_attributes: Mapping[str, str]
    nn_modules: Mapping[str, str]
    module_attributes: Mapping[str, str]
    named_tuple_fields: Mapping[str, str]

    def function_kind(self, qualname: str) -> str | None:
        """What calling ``qualname`` returns, or ``None`` if torch has no such function."""
        return self.functions.get(qualname)

    def method_kind(self, name: str) -> str | None:
        """What ``tensor.<name>(...)`` returns, or ``None`` if tensors have no such method."""
        return self.tensor_methods.get(name)

    def attribute_kind(self, name: str) -> str | None:
        """What ``tensor.<name>`` (a property, not a call) is, or ``None`` if unknown."""
        return self.tensor_attributes.get(name)


@functools.cache
def load_facts() -> TorchFacts:
    """Read the shipped table once per process."""
    data = json.loads(FACTS_PATH.read_text(encoding="utf-8"))
    return TorchFacts(
        torch_version=data["torch_version"],
        functions=MappingProxyType(data["functions"]),
        tensor_methods=MappingProxyType(data["tensor_methods"]),
        tensor_attributes=MappingProxyType(data["tensor_attributes"]),
        nn_modules=MappingProxyType(data["nn_modules"]),
        module_attributes=MappingProxyType(data["module_attributes"]),
        named_tuple_fields=MappingProxyType(data["named_tuple_fields"]),
    )
