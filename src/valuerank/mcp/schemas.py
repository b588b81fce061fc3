"""Each tool's JSON schemas, read from the API's own /openapi.json (pure: no I/O).

A tool's input is its route's path and query parameters and its JSON body's fields (renamed
where the original names them differently); its output is the route's `data` (the answer
inside the API's envelope), or the fields the tool picks from it. The schemas are generated
from the very classes that validate the requests and write the answers (valuerank.shapes),
so a tool cannot drift from its route. References to the API's components become `$defs`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from valuerank.mcp.spec import ToolSpec

COMPONENTS = "#/components/schemas/"
DEFS = "#/$defs/"
ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


def _operation(openapi: Mapping[str, Any], spec: ToolSpec) -> Mapping[str, Any]:
    operation: Mapping[str, Any] = (
        openapi.get("paths", {}).get(spec.route, {}).get(spec.method.lower(), {})
    )
    return operation


def _components(openapi: Mapping[str, Any]) -> Mapping[str, Any]:
    found: Mapping[str, Any] = openapi.get("components", {}).get("schemas", {})
    return found


def _rewrite(schema: Any, seen: set[str]) -> Any:
    """`schema` with its component references pointing at `$defs` (names collected)."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(COMPONENTS):
                name = value.removeprefix(COMPONENTS)
                seen.add(name)
                out[key] = DEFS + name
            else:
                out[key] = _rewrite(value, seen)
        return out
    if isinstance(schema, list):
        return [_rewrite(item, seen) for item in schema]
    return schema


def _with_defs(schema: dict[str, Any], openapi: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` made self-contained: every component it reaches, transitively, in `$defs`."""
    components = _components(openapi)
    names: set[str] = set()
    result: dict[str, Any] = _rewrite(schema, names)
    defs: dict[str, Any] = {}
    pending = sorted(names)
    while pending:
        name = pending.pop()
        if name in defs or name not in components:
            continue
        found: set[str] = set()
        defs[name] = _rewrite(copy.deepcopy(components[name]), found)
        pending += sorted(found - set(defs))
    if defs:
        result["$defs"] = defs
    return result


def _resolve(schema: Mapping[str, Any], openapi: Mapping[str, Any]) -> Mapping[str, Any]:
    """A top-level `$ref` followed to its component (one level is all the API uses)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(COMPONENTS):
        resolved: Mapping[str, Any] = _components(openapi).get(ref.removeprefix(COMPONENTS), {})
        return resolved
    return schema


def input_schema(spec: ToolSpec, openapi: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's arguments: the route's parameters and body fields, as the original names
    them; `additionalProperties: false`, so a misspelt argument is refused, not ignored."""
    operation = _operation(openapi, spec)
    to_argument = {param: arg for arg, param in spec.renames.items()}
    properties: dict[str, Any] = {}
    required: list[str] = []

    def add(name: str, schema: Mapping[str, Any], needed: bool, description: str = "") -> None:
        argument = to_argument.get(name, name)
        if argument in spec.drop_arguments or name in spec.fixed_body:
            return
        entry = dict(schema)
        if description and "description" not in entry:
            entry["description"] = description
        properties[argument] = entry
        if needed and argument not in spec.optional:
            required.append(argument)

    if spec.unsupported is None:
        for parameter in operation.get("parameters", []):
            if parameter.get("in") in ("path", "query"):
                add(
                    parameter["name"],
                    parameter.get("schema", {}),
                    bool(parameter.get("required")) or parameter.get("in") == "path",
                    parameter.get("description", ""),
                )
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body and "*body" not in spec.drop_arguments:
            resolved = _resolve(body.get("schema", {}), openapi)
            needed = set(resolved.get("required", []))
            for name, schema in resolved.get("properties", {}).items():
                add(name, schema, name in needed)
    for name in spec.path_params:  # a route missing from the document still takes its ids
        if name not in properties:
            properties[name] = {"type": "string"}
            required.append(name)
    properties.update(spec.arguments)
    arguments: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        arguments["required"] = sorted(set(required))
    return _with_defs(arguments, openapi)


def _data_schema(operation: Mapping[str, Any], openapi: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `data` of the route's success envelope ({} when the route documents none)."""
    for status in ("200", "201"):
        content = operation.get("responses", {}).get(status, {}).get("content", {})
        envelope = _resolve(content.get("application/json", {}).get("schema", {}), openapi)
        data = envelope.get("properties", {}).get("data")
        if data:
            return _resolve(data, openapi)
    return {}


def output_schema(spec: ToolSpec, openapi: Mapping[str, Any]) -> dict[str, Any]:
    """What the tool's structured output holds: the route's answer (its picked fields), or
    any object when the route documents no shape (its answer is still the API's)."""
    if spec.unsupported is not None:
        return dict(ANY_OBJECT)
    if spec.answers_as is not None:
        operation = openapi.get("paths", {}).get(spec.answers_as, {}).get("get", {})
    else:
        operation = _operation(openapi, spec)
    data = _data_schema(operation, openapi)
    if data.get("type") != "object" or "properties" not in data:
        return dict(ANY_OBJECT)
    if spec.pick is None:
        return _with_defs(copy.deepcopy(dict(data)), openapi)
    properties = data["properties"]
    picked = {name: properties[name] for name in spec.pick if name in properties}
    required = [name for name in data.get("required", []) if name in picked]
    return _with_defs(
        {
            "type": "object",
            "properties": copy.deepcopy(picked),
            "required": required,
            "additionalProperties": False,
        },
        openapi,
    )
