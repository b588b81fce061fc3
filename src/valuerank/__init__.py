"""ValueRank: measure how AI models prioritise human values in moral dilemmas.

`from valuerank import Client` is the Python API (docs/notebooks.md); it is loaded when first
named, so `import valuerank` (and the `valuerank` command) loads nothing else.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Not `typing.TYPE_CHECKING`: importing `typing` would cost every command ~15 ms at start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from valuerank.sdk import Client

__all__ = ["Client", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from valuerank.sdk import Client

        globals()["Client"] = Client
        return Client
    raise AttributeError(f"module 'valuerank' has no attribute {name!r}")
