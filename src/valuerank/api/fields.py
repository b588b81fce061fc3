"""Constraints shared by the request models of several routers."""

from __future__ import annotations

# Text without NUL characters: no file or name holds one, and PostgreSQL cannot store one
# (nor take one as a query parameter).
NO_NUL = r"^[^\x00]*$"
