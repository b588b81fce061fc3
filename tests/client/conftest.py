"""The real API on a real uvicorn server on loopback (tests/api's fixtures), for its client."""

from tests.api.conftest import TOKEN, live, make_run

__all__ = ["TOKEN", "live", "make_run"]
