"""The faults scripted models inject: `rate_limit_rpm` (a sliding minute per model id) and
`error_rate` (a transient error drawn per call, with a fresh draw for each retry).

Both need memory across calls — the window's admissions, how often a request was sent —
which a `FaultState` owns. Every `ScriptedProvider` shares the process's one
(`PROCESS_FAULTS`) unless it is given another, so all instances with the same model id (the
workers' provider pools, one per worker) share one rate limit, as a real provider's would."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque

from valuerank.providers.base import ProviderRateLimited, ProviderTransient
from valuerank.providers.scripted_config import ScriptedConfig
from valuerank.providers.scripted_draws import unit

RATE_WINDOW_SECONDS = 60.0
MAX_TRACKED_REQUESTS = 65_536


class SlidingWindow:
    """At most `limit` admissions per `window` seconds; times come from the caller's clock."""

    def __init__(self, limit: int, window: float = RATE_WINDOW_SECONDS) -> None:
        self.limit = limit
        self.window = window
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def admit(self, now: float) -> tuple[bool, float, int]:
        """(admitted, seconds until a slot frees when refused, slots left)."""
        with self._lock:
            while self._times and self._times[0] <= now - self.window:
                self._times.popleft()
            if len(self._times) >= self.limit:
                return False, max(self._times[0] + self.window - now, 0.001), 0
            self._times.append(now)
            return True, 0.0, self.limit - len(self._times)


class FaultState:
    """The rate-limit windows (per model id) and the attempt counts (per request, bounded
    memory) of the scripted models that share it. Thread-safe: workers may call from
    several threads."""

    def __init__(self, max_tracked_requests: int = MAX_TRACKED_REQUESTS) -> None:
        self._max_tracked = max_tracked_requests
        self._limits_lock = threading.Lock()
        self._limits: dict[str, SlidingWindow] = {}
        self._attempts_lock = threading.Lock()
        self._attempts: OrderedDict[str, int] = OrderedDict()

    def window_for(self, config: ScriptedConfig) -> SlidingWindow | None:
        if config.rate_limit_rpm is None:
            return None
        with self._limits_lock:
            window = self._limits.get(config.model_id)
            if window is None:
                window = self._limits[config.model_id] = SlidingWindow(config.rate_limit_rpm)
            return window

    def attempt_number(self, key: str) -> int:
        """How many times this exact request was sent before."""
        with self._attempts_lock:
            count = self._attempts.pop(key, 0)
            self._attempts[key] = count + 1
            while len(self._attempts) > self._max_tracked:
                self._attempts.popitem(last=False)
            return count

    def admit(self, config: ScriptedConfig, now: float) -> dict[str, str]:
        """The call's rate-limit headers, or `ProviderRateLimited` past `rate_limit_rpm`."""
        window = self.window_for(config)
        if window is None:
            return {}
        admitted, retry_after, left = window.admit(now)
        headers = {
            "x-ratelimit-limit-requests": str(window.limit),
            "x-ratelimit-remaining-requests": str(left),
        }
        if not admitted:
            headers["retry-after"] = str(math.ceil(retry_after))
            raise ProviderRateLimited(
                f"synthetic rate limit of {config.model_id}: {window.limit} requests per minute",
                retry_after=retry_after,
                headers=headers,
            )
        return headers

    def maybe_fail(self, config: ScriptedConfig, request_material: str) -> None:
        """`ProviderTransient` with probability `error_rate`, drawn from the request and how
        often it was sent (so a retry gets a fresh draw)."""
        if config.error_rate <= 0:
            return
        attempt = self.attempt_number(f"{config.model_id}\0{request_material}")
        if unit(request_material, str(attempt), "error") < config.error_rate:
            raise ProviderTransient(
                f"synthetic transient error from {config.model_id} "
                f"(error_rate={config.error_rate:g})",
                status=500,
            )

    def reset(self) -> None:
        """Forget every rate-limit window and attempt count."""
        with self._limits_lock:
            self._limits.clear()
        with self._attempts_lock:
            self._attempts.clear()


# The process's: what every ScriptedProvider shares unless given its own.
PROCESS_FAULTS = FaultState()


def reset_scripted_state() -> None:
    """Forget the process's rate-limit windows and attempt counts (tests)."""
    PROCESS_FAULTS.reset()
