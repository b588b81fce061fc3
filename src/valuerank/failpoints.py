"""Named crash points for fault tests of real processes.

A process started with `VALUERANK_FAILPOINT=<name>` kills itself with SIGKILL the first time it
reaches `failpoint("<name>")`: no cleanup, no finally blocks, exactly like a machine losing
power at that line. Tests use it to prove that work written just before a crash is neither lost
nor written twice. Unset (always, outside such tests), a failpoint is one comparison.
"""

from __future__ import annotations

import os
import signal

ENV_VAR = "VALUERANK_FAILPOINT"
# Read once: the variable belongs to the process, not to a request.
_ARMED = os.environ.get(ENV_VAR, "")

PROBE_AFTER_TRANSCRIPT = "probe.after_transcript"
JUDGE_AFTER_JUDGMENT = "judge.after_judgment"


def failpoint(name: str) -> None:
    """Die here, now, if this process was started with this failpoint armed."""
    if _ARMED and name == _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)
