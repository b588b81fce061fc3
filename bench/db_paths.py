"""What the fast paths on private APIs buy: `VALUERANK_DB_FAST_PATHS` true against false.

    python -m bench.db_paths [--json] [--transactions 2000] [--repeats 3]

A probe's statement mix on SQLite, the embedded default: per transaction one read of a run
by id, one upsert through `CompiledOnce` (a probe writes three) and one plain UPDATE, on a
file database in WAL mode as `valuerank` opens it. The peer is SQLAlchemy with its stock
aiosqlite adapter and upserts compiled at each execution, what a user of both libraries gets
by default. Printed: the CPU (this process, all threads) and wall time per transaction of
each, the best of `--repeats`, their ratios, and the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, select, text, update

from valuerank.db.compiled import CompiledOnce
from valuerank.db.engine import create_database

ITEMS = Table("items", MetaData(), Column("id", Integer, primary_key=True), Column("v", String(40)))
UPSERT = CompiledOnce(
    lambda insert: (s := insert(ITEMS)).on_conflict_do_update(
        index_elements=["id"], set_={"v": s.excluded.v}
    )
)
READ = select(ITEMS).where(ITEMS.c.id == bindparam("id"))
TOUCH = update(ITEMS).where(ITEMS.c.id == bindparam("key")).values(v=bindparam("v"))


async def _measure(fast: bool, transactions: int, folder: Path) -> dict[str, float]:
    db = create_database(f"sqlite:///{folder / f'paths-{fast}.db'}", fast_paths=fast)
    try:
        async with db.transaction() as conn:
            await conn.execute(text("PRAGMA journal_mode=WAL"))
            await conn.execute(text("CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT)"))
        cpu, wall = time.process_time(), time.perf_counter()
        for n in range(transactions):
            async with db.transaction(immediate=True) as conn:
                await conn.execute(READ, {"id": n % 50})
                await UPSERT.execute(conn, {"id": n % 50, "v": f"value {n}"})
                await conn.execute(TOUCH, {"key": (n + 1) % 50, "v": "touched"})
        return {
            "cpu_ms": (time.process_time() - cpu) * 1000 / transactions,
            "wall_ms": (time.perf_counter() - wall) * 1000 / transactions,
        }
    finally:
        await db.dispose()


async def run(transactions: int, repeats: int) -> dict[str, Any]:
    before = os.getloadavg()
    best: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):
            for name, fast in (("fast", True), ("stock", False)):
                got = await _measure(fast, transactions, Path(folder) / f"{name}-{_}")
                if name not in best or got["cpu_ms"] < best[name]["cpu_ms"]:
                    best[name] = got
    return {
        "transactions": transactions,
        "repeats": repeats,
        "fast": best["fast"],
        "stock": best["stock"],
        "cpu_ratio_stock_over_fast": best["stock"]["cpu_ms"] / best["fast"]["cpu_ms"],
        "wall_ratio_stock_over_fast": best["stock"]["wall_ms"] / best["fast"]["wall_ms"],
        "load_average": {"before": list(before), "after": list(os.getloadavg())},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.transactions, args.repeats))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name in ("fast", "stock"):
        got = result[name]
        print(f"{name:6} {got['cpu_ms']:.3f} ms CPU, {got['wall_ms']:.3f} ms wall per transaction")
    print(
        f"stock / fast: CPU {result['cpu_ratio_stock_over_fast']:.2f}x, "
        f"wall {result['wall_ratio_stock_over_fast']:.2f}x "
        f"(load average {result['load_average']['before'][0]:.1f} -> "
        f"{result['load_average']['after'][0]:.1f})"
    )


if __name__ == "__main__":
    main()
