"""A remote `valuerank analyze` prints the server's answer without loading the statistics
(scipy, statsmodels, matplotlib take seconds to import): in a new process, the full CLI asks
a real API on loopback, on each backend, and the modules it loaded are checked."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.api.conftest import TOKEN, api_settings, make_demo_run, provision_admin
from tests.cli_against_server import UNTOUCHED_DB, user_env
from tests.servers import running

from valuerank.api import create_app
from valuerank.db import Database

STATISTICS = ("scipy", "statsmodels", "matplotlib")


async def test_a_remote_analyze_loads_no_statistics(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    await provision_admin(db, org_id)
    run = await make_demo_run(db, org_id, decisions={"scripted:utilitarian": [2, 4, 5]})
    probe = (
        "import json, sys\n"
        "from typer.testing import CliRunner\n"
        "from valuerank.cli import app\n"
        f"out = CliRunner().invoke(app, ['analyze', {run.id!r}, '--json'])\n"
        f"loaded = sorted(m for m in {STATISTICS!r} if m in sys.modules)\n"
        "print(json.dumps([out.exit_code, json.loads(out.stdout)['analysis']['meta'], loaded]))"
    )
    async with running(create_app(db, org_id=org_id, settings=api_settings())) as url:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            probe,
            env=user_env(url, TOKEN, tmp_path),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
    code, meta, loaded = json.loads(out.decode().strip().splitlines()[-1])
    assert (code, meta["runId"], loaded) == (0, run.id, [])
    assert not (tmp_path / UNTOUCHED_DB).exists()
