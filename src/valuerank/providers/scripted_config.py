"""What a scripted model id says: `scripted:<persona>?latency_ms=…&error_rate=…&
rate_limit_rpm=…&seed=…&position_bias=…&wording_bias=…`. The personas, the parameters and
their bounds, parsed into a `ScriptedConfig` (pure: no I/O); `providers/scripted.py` describes
what each persona and parameter does."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode

from valuerank.providers.base import ProviderPermanent

PROVIDER_NAME = "scripted"

PersonaKind = Literal["weighted", "random", "refuser", "rambler"]


class ScriptedConfigError(ProviderPermanent, ValueError):
    """A scripted model id or request the provider cannot serve: retrying cannot help."""


@dataclass(frozen=True)
class Persona:
    name: str
    description: str
    kind: PersonaKind = "weighted"
    weight_key: str | None = None
    direction: float = 1.0
    bias: float = 0.0
    noise: float = 0.3


PERSONAS: Mapping[str, Persona] = {
    p.name: p
    for p in (
        Persona("utilitarian", "rates by outcomes: its own hash weights", weight_key="utilitarian"),
        Persona(
            "deontologist",
            "rates by duties: weights unrelated to the utilitarian's",
            weight_key="deontologist",
        ),
        Persona(
            "contrarian",
            "the utilitarian mirrored: disagrees with it on every dimension",
            weight_key="utilitarian",
            direction=-1.0,
        ),
        Persona(
            "centrist",
            "the utilitarian damped: stays near the middle of the scale",
            weight_key="utilitarian",
            direction=0.35,
            noise=0.2,
        ),
        Persona(
            "agreeable",
            "leans to the top of the scale",
            weight_key="utilitarian",
            direction=0.5,
            bias=1.2,
        ),
        Persona("neutral", "the midpoint of the scale, give or take a point", direction=0.0),
        Persona("random", "a uniformly random rating (seeded)", kind="random"),
        Persona("refuser", "always refuses politely, never rates", kind="refuser"),
        Persona("rambler", "answers at length and never gives a rating", kind="rambler"),
    )
}


@dataclass(frozen=True)
class ScriptedConfig:
    persona: Persona
    latency_ms: float = 0.0
    error_rate: float = 0.0
    rate_limit_rpm: int | None = None
    seed: int = 0
    # Known biases for analyses to find (see "Presentation biases" above), in scale points.
    position_bias: float = 0.0
    wording_bias: float = 0.0

    @property
    def model_id(self) -> str:
        """The canonical id: parameters sorted, defaults left out."""
        params: dict[str, str] = {}
        if self.latency_ms:
            params["latency_ms"] = f"{self.latency_ms:g}"
        if self.error_rate:
            params["error_rate"] = f"{self.error_rate:g}"
        if self.rate_limit_rpm is not None:
            params["rate_limit_rpm"] = str(self.rate_limit_rpm)
        if self.seed:
            params["seed"] = str(self.seed)
        if self.position_bias:
            params["position_bias"] = f"{self.position_bias:g}"
        if self.wording_bias:
            params["wording_bias"] = f"{self.wording_bias:g}"
        query = urlencode(sorted(params.items()))
        return f"{PROVIDER_NAME}:{self.persona.name}" + (f"?{query}" if query else "")


def _parse_float(name: str, text: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise ScriptedConfigError(f"{name}={text!r}: expected a number in [{low:g}, {high:g}]")
    return value


def _parse_int(name: str, text: str, low: int | None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ScriptedConfigError(f"{name}={text!r}: expected an integer") from None
    if low is not None and value < low:
        raise ScriptedConfigError(f"{name}={text!r}: expected an integer >= {low}")
    return value


_PARSERS: Mapping[str, Callable[[str], tuple[str, float | int]]] = {
    "latency_ms": lambda t: ("latency_ms", _parse_float("latency_ms", t, 0.0, 3_600_000.0)),
    "error_rate": lambda t: ("error_rate", _parse_float("error_rate", t, 0.0, 1.0)),
    "rate_limit_rpm": lambda t: ("rate_limit_rpm", _parse_int("rate_limit_rpm", t, 1)),
    "seed": lambda t: ("seed", _parse_int("seed", t, None)),
    "position_bias": lambda t: ("position_bias", _parse_float("position_bias", t, -4.0, 4.0)),
    "wording_bias": lambda t: ("wording_bias", _parse_float("wording_bias", t, -4.0, 4.0)),
}
PARAMETERS = tuple(_PARSERS)


def parse_scripted_model(model_name: str) -> ScriptedConfig:
    """`<persona>?k=v&…` (the part after `scripted:`); `ScriptedConfigError` says what is valid."""
    persona_name, _, query = model_name.strip().partition("?")
    persona = PERSONAS.get(persona_name.strip())
    if persona is None:
        raise ScriptedConfigError(
            f"unknown scripted persona {persona_name!r}; valid personas: {', '.join(PERSONAS)}"
        )
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError as exc:
        raise ScriptedConfigError(
            f"scripted model {model_name!r}: {exc}; write parameters as "
            f"?name=value&…, with names from {', '.join(PARAMETERS)}"
        ) from None
    values: dict[str, Any] = {}
    for key, text in pairs:
        parser = _PARSERS.get(key)
        if parser is None:
            raise ScriptedConfigError(
                f"unknown parameter {key!r} of scripted model {model_name!r}; "
                f"valid parameters: {', '.join(PARAMETERS)}"
            )
        if key in values:
            raise ScriptedConfigError(f"parameter {key!r} given twice in {model_name!r}")
        field_name, value = parser(text)
        values[field_name] = value
    return ScriptedConfig(persona=persona, **values)
