"""The formats package loads its names on first use (tests/test_lazy.py): the errors alone
(all the CLI's error handling needs) load no format and no YAML."""

from __future__ import annotations

from tests.test_lazy import fresh_json


def test_the_errors_load_without_the_formats_or_yaml() -> None:
    loaded = fresh_json(
        "import json, sys\n"
        "from valuerank.formats.errors import FormatError\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.startswith('valuerank.formats.') or m.split('.')[0] == 'yaml')))"
    )
    assert loaded == ["valuerank.formats.errors"]
