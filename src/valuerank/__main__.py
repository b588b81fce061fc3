"""`python -m valuerank …`: the same CLI as the `valuerank` console script."""

from __future__ import annotations

from valuerank.cli import app

if __name__ == "__main__":
    app(prog_name="valuerank")
