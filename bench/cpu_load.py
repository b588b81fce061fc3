"""CPU-burning neighbours for the benchmarks (`python -m bench.queue --load N`).

`burners(n)` starts n processes that spin (`while True: pass`) for as long as the `with`
block runs and kills them when it ends, also on an error or Ctrl-C; on Linux each also dies
with the benchmark's process if that is killed outright (PR_SET_PDEATHSIG), so none is left
spinning. The load average is read before (once the burners have run for `settle` seconds)
and after.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

SPIN = "while True: pass"
# Linux: prctl(PR_SET_PDEATHSIG, SIGKILL) first, so the burner dies with its parent.
DIE_WITH_PARENT = "import ctypes; ctypes.CDLL(None).prctl(1, 9)\n"


@dataclass
class Load:
    burners: int
    pids: list[int] = field(default_factory=list)
    before: tuple[float, float, float] | None = None
    after: tuple[float, float, float] | None = None

    def report(self) -> dict[str, object]:
        """The burners and the load averages (1, 5, 15 min) with them running."""

        def rounded(load: tuple[float, float, float] | None) -> list[float] | None:
            return None if load is None else [round(x, 2) for x in load]

        return {
            "burners": self.burners,
            "load_average": {"before": rounded(self.before), "after": rounded(self.after)},
            "cpus": os.cpu_count(),
        }


@contextmanager
def burners(n: int, *, settle: float = 1.0) -> Iterator[Load]:
    """`n` spinning processes while the block runs (none for n = 0)."""
    load = Load(n)
    procs: list[subprocess.Popen[bytes]] = []
    code = (DIE_WITH_PARENT if sys.platform.startswith("linux") else "") + SPIN
    try:
        for _ in range(n):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", code],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                )
            )
        load.pids = [p.pid for p in procs]
        if n:
            time.sleep(settle)
        load.before = os.getloadavg()
        yield load
        load.after = os.getloadavg()
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
