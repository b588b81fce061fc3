"""Model ids are `provider:model`, as in the CLI: `openai:gpt-4.1`, `scripted:contrarian?seed=3`."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*$")
# What the API documents of a model id (JSON Schema `pattern`): a provider, a colon, then a
# name with at least one character that is not blank (and no NUL, which nothing stores).
MODEL_ID_PATTERN = r"^[a-z][a-z0-9_-]*:[^\x00]*[^\s\x00][^\x00]*$"


class InvalidModelId(ValueError):
    """A model id that is not `provider:model`."""


@dataclass(frozen=True, order=True)
class ModelId:
    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


def parse_model_id(text: str) -> ModelId:
    """Split `provider:model` at the first colon; the model part may hold more colons."""
    provider, sep, name = text.strip().partition(":")
    if not sep or not name or not _PROVIDER.match(provider):
        raise InvalidModelId(
            f"model id {text!r} is not 'provider:model' "
            "(e.g. 'openai:gpt-4.1', 'local:gemma3-270m')"
        )
    return ModelId(provider=provider, name=name)
