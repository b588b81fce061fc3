"""The settings' request rates: a configured rate is checked with `limits` (a clear error for
one it cannot read), and the defaults, known good, do not load it at every command's start."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from tests.test_lazy import fresh_json

from valuerank.config import Settings


def test_a_rate_that_is_not_one_is_refused_with_how_to_write_it() -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(rate_limit_login="banana")
    assert "'banana' is not a rate: write e.g. 100/minute" in str(refused.value)


def test_a_configured_rate_in_another_spelling_is_kept() -> None:
    assert Settings(rate_limit_standard="5 per second").rate_limit_standard == "5 per second"


def test_the_default_rates_do_not_load_the_rate_library() -> None:
    loaded = fresh_json(
        "import json, sys; from valuerank.config import Settings; Settings(); "
        "print(json.dumps('limits' in sys.modules))"
    )
    assert loaded is False
