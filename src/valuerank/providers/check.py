"""Can this model id be served at all? Checked when a run is created, before anything is
written, so that a typo is an error naming the model — never a run whose every job fails.

`model_problem` looks only at the id and this machine: a known provider prefix, a scripted
persona and its query parameters, a `local:` model whose file (or the packaged default and the
`local` extra) is here. Whether the registry knows the model is the registry's question
(`valuerank.registry.check`).
"""

from __future__ import annotations

from valuerank.providers.base import ProviderPermanent
from valuerank.providers.model_id import InvalidModelId, ModelId, parse_model_id
from valuerank.providers.presets import UnknownProvider, preset_for


def model_problem(model_id: str) -> str | None:
    """Why `model_id` cannot be served here, naming it and the valid choices; None if it can."""
    try:
        mid = parse_model_id(model_id)
    except InvalidModelId as exc:
        return str(exc)  # it quotes the id
    try:
        preset = preset_for(mid.provider)
    except UnknownProvider as exc:
        return f"{model_id}: {exc}"
    if preset.kind == "scripted":
        from valuerank.providers.scripted_config import ScriptedConfigError, parse_scripted_model

        try:
            parse_scripted_model(mid.name)
        except ScriptedConfigError as exc:
            return f"{model_id}: {exc}"
    elif preset.kind == "local":
        return _local_problem(mid)
    return None


def _local_problem(mid: ModelId) -> str | None:
    from valuerank.providers.local import xllamacpp_available
    from valuerank.providers.local_model import LOCAL_EXTRA_HINT, resolve_local_model

    try:
        resolve_local_model(mid.name)
    except ProviderPermanent as exc:
        return f"{mid}: {exc}"
    if not xllamacpp_available():
        return f"{mid}: {LOCAL_EXTRA_HINT}"
    return None


def is_local_file(mid: ModelId) -> bool:
    """A `local:/path/to/model.gguf` id: a file of the user's, which no registry lists."""
    name = mid.name.strip()
    return mid.provider == "local" and (name.lower().endswith(".gguf") or "/" in name)
