"""Constraints shared by the request models of several routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

# Text without NUL characters: no file or name holds one, and PostgreSQL cannot store one
# (nor take one as a query parameter).
NO_NUL = r"^[^\x00]*$"

# The filters of the lists of versioned things (definitions, rubrics).
NameFilter = Annotated[
    str | None, Query(max_length=300, pattern=NO_NUL, description="Part of the name (any case).")
]
LabelFilter = Annotated[
    str | None, Query(max_length=100, pattern=NO_NUL, description="This version label.")
]
