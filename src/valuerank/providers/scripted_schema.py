"""A scripted answer shaped by the request's JSON schema: exactly the properties it names,
each coerced to its declared type, enum and bounds (a small, common subset of JSON Schema),
filled from the answer's facts. Pure: no I/O."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from valuerank.providers.scripted_draws import round_half_up, unit


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [str(t) for t in declared]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _conform(value: Any, schema: Mapping[str, Any], facts: Mapping[str, Any], key: str) -> Any:
    """`value` in the shape `schema` declares: type, enum, bounds (a small, common subset)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        if value in enum:
            return value
        if str(value) in [str(e) for e in enum]:
            return enum[[str(e) for e in enum].index(str(value))]
        return enum[int(unit(key, json.dumps(enum, default=str)) * len(enum))]
    types = _types(schema)
    if value is None and "null" in types:
        return None
    kind = next((t for t in types if t != "null"), None)
    if kind in ("integer", "number"):
        number = (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
        )
        maximum = schema.get("maximum")
        minimum = schema.get("minimum")
        if key == "confidence" and isinstance(maximum, int | float) and maximum <= 1:
            number = number / 100.0
        if isinstance(maximum, int | float):
            number = min(number, float(maximum))
        if isinstance(minimum, int | float):
            number = max(number, float(minimum))
        return round_half_up(number) if kind == "integer" else number
    if kind == "string":
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return "" if value is None else str(value)
    if kind == "boolean":
        return bool(value)
    if kind == "array":
        raw_items = schema.get("items")
        items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
        sequence = value if isinstance(value, list) else ([] if value is None else [value])
        return [_conform(item, items, facts, key) for item in sequence]
    if kind == "object":
        return fill_object(schema, facts)
    return value


def fill_object(schema: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The object `schema` declares, from `facts`; without properties, the judge's four."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return {
            k: facts[k]
            for k in ("decision", "prioritized_values", "deprioritized_values", "confidence")
        }
    return {
        name: _conform(facts.get(name), sub if isinstance(sub, Mapping) else {}, facts, name)
        for name, sub in properties.items()
    }
