"""The `valuerank` command's entry point.

`valuerank runs status RUN [--json]` with VALUERANK_API_URL in the environment is answered
here, by the server there, before the CLI loads: scripts and dashboards that poll a run start a
process each time, and Typer, pydantic-settings and the database stack take 0.3–1 s to load
against ~50 ms for this path. Any other command or form (`--help`, a setting only in `.env`,
an option this path does not know) goes to the full CLI, whose `runs status` asks the same
server through the same code (`valuerank.client.runs`), so both print the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

JSON_FLAG = "--json"


def status_request(args: Sequence[str]) -> tuple[str, bool] | None:
    """(run reference, --json) when `args` are exactly `runs status REF` with `--json`
    anywhere after `status` at most once; None for anything else."""
    if len(args) < 3 or args[0] != "runs" or args[1] != "status":
        return None
    rest = list(args[2:])
    as_json = JSON_FLAG in rest
    if as_json:
        rest.remove(JSON_FLAG)
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    return rest[0], as_json


def answer_fast(args: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """The exit code of `args` answered by the server in `environ`, or None when the full
    CLI must answer."""
    request = status_request(args)
    if request is None:
        return None
    from valuerank.client.api import ApiClient

    client = ApiClient.from_env(environ)
    if client is None:
        return None
    from valuerank.client.runs import print_status_from

    ref, as_json = request
    return print_status_from(client, ref, as_json=as_json)


def main(argv: Sequence[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    code = answer_fast(args, os.environ)
    if code is not None:
        sys.stdout.flush()
        raise SystemExit(code)
    from valuerank.cli import app

    app(args=args, prog_name="valuerank")
