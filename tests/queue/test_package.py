"""The queue package loads its names on first use (tests/test_lazy.py): a name shared with its
submodule stays the function whichever order modules are imported in, and a submodule
imported alone (the dialect helpers) loads no other part of the queue."""

from __future__ import annotations

from tests.test_lazy import fresh_json


def test_a_name_shared_with_its_submodule_stays_the_function() -> None:
    # `claim` and `enqueue` are both submodules and exported functions; the submodules are
    # imported first here (by the worker, and directly), and the package still gives the
    # functions, as when it imported everything at once.
    loaded = fresh_json(
        "import json, inspect\n"
        "import valuerank.queue.worker, valuerank.queue.enqueue\n"
        "from valuerank.queue import Enqueued, claim, enqueue\n"
        "import valuerank.queue as q\n"
        "from valuerank.queue import lease as leases\n"
        "print(json.dumps([inspect.isfunction(claim), inspect.isfunction(enqueue),\n"
        "                  inspect.isfunction(q.claim), inspect.ismodule(leases)]))"
    )
    assert loaded == [True, True, True, True]


def test_the_dialect_helpers_load_without_the_rest_of_the_queue_or_psycopg() -> None:
    loaded = fresh_json(
        "import json, sys\n"
        "import valuerank.queue.dialect\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.startswith('valuerank.queue.') or m.split('.')[0] == 'psycopg')))"
    )
    assert loaded == ["valuerank.queue.dialect"]


def test_the_outbox_statuses_load_without_its_http_client_or_signing() -> None:
    # The metrics and the maintenance read the statuses; the outbox's other steps stay unloaded.
    loaded = fresh_json(
        "import json, sys\n"
        "from valuerank.queue.outbox import DELIVERED, OUTBOX_STATUSES\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.startswith('valuerank.queue.') or m in ('urllib.request', 'valuerank.crypto'))))"
    )
    assert loaded == ["valuerank.queue.outbox", "valuerank.queue.outbox.statuses"]
