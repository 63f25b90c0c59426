"""What a target builds, and the options and errors shared by every way of building one.

Kept apart from :mod:`.targets` (which parses TARGET strings and dispatches)
so that the Hugging Face adapter in :mod:`.hf` can use these types without
importing :mod:`.targets`, which imports the adapter: no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

InputSet = tuple[tuple[Any, ...], dict[str, Any]]


class TargetError(Exception):
    """A target cannot be parsed, found or built; the message is for the user."""


@dataclass(frozen=True)
class HfOptions:
    """Options of the Hugging Face adapter (``--hf-config``, ``--hf-seq-len``).

    ``config`` holds ``(model_type or None, key, value)``; a ``None`` model
    type applies the setting to every ``hf:`` target.
    """

    config: tuple[tuple[str | None, str, Any], ...] = ()
    seq_len: int = 13

    def overrides_for(self, model_type: str) -> dict[str, Any]:
        """The config fields to set for one model type, specific ones last."""
        general = {key: value for owner, key, value in self.config if owner is None}
        specific = {key: value for owner, key, value in self.config if owner == model_type}
        return {**general, **specific}


@dataclass
class Workload:
    """What a factory built: the callable, every input set, and tolerances."""

    callable: Callable[..., Any]
    inputs: list[InputSet]
    atol: float | None = None
    rtol: float | None = None
