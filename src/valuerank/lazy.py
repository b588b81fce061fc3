"""Packages that load their exported names from their submodules on first use (PEP 562):
importing any submodule runs the package's `__init__`, which would otherwise load every
submodule with it, and a short command pays for all of them at start-up."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any


def exports_by_name(table: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """{exported name: its submodule} from {submodule: the names exported from it}."""
    return {name: module for module, names in table.items() for name in names}


def load_export(
    package: str, namespace: MutableMapping[str, Any], exports: Mapping[str, str], name: str
) -> Any:
    """A package's `__getattr__`: `name` from its submodule, bound on the package so the
    next lookup is a plain attribute."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{module}"), name)
    namespace[name] = value
    return value
