"""`local:<model>`: a GGUF run in-process by llama.cpp (the `local` extra); no key, no network.

The default `local:gemma3-270m` is the Gemma 3 270M GGUF shipped on PyPI (see `local_model`
for how the file is found, assembled and verified). llama.cpp is driven through `xllamacpp`:
`xllamacpp.Server(CommonParams)` loads the model and `Server.handle_chat_completions(body)`
answers an OpenAI-style chat body in the calling thread, applying the model's chat template.
The native server also opens an HTTP listener on a random loopback port (it cannot be turned
off); it is locked with a random API key nobody knows, so only this process can use the model.

One model instance per (file, settings) per process, loaded lazily by the first request and
shared by every provider instance. Inference blocks, so it runs in a worker thread
(`asyncio.to_thread`) under a per-model lock: calls are served one at a time.

Structured answers:
- `request.json_schema`: llama.cpp constrains the output to the schema (compact JSON).
- `request.hints["rating_scale"]` (e.g. `[1, 5]`): a GBNF grammar makes the answer one short
  line of text, a newline and `Rating: N` with N in the scale, so the embedded model always
  gives a parseable rating. Should the token budget run out first, a second, one-token pass
  continues the answer from `Rating: ` with N constrained to the scale. This hint is a format
  constraint, not a fact about the scenario; no other hint is read.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from valuerank.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderError,
    ProviderPermanent,
    ProviderTransient,
    Usage,
)
from valuerank.providers.local_model import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_EXTRA_HINT,
    LocalModelFile,
    LocalModelSettings,
    resolve_local_model,
    verify_model_file,
)

PROVIDER_NAME = "local"
# llama.cpp's built-in (non-Jinja) template for models whose GGUF carries none, as the
# packaged Gemma 3 270M: without it llama.cpp would fall back to ChatML, which Gemma never saw.
_BUILTIN_TEMPLATES = {DEFAULT_LOCAL_MODEL: "gemma"}
# The free-text line of a rating answer: at most this many characters (and at least the floor).
RATING_TEXT_MAX_CHARS = 400
RATING_TEXT_MIN_CHARS = 16
# Scales wider than this are not a rating.
_MAX_SCALE_VALUES = 101
_CONTEXT_ERRORS = re.compile(r"exceed_context_size|context size|context length", re.IGNORECASE)


def load_xllamacpp() -> Any:
    """The `xllamacpp` module, or `ProviderPermanent` saying how to install it."""
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise ProviderPermanent(f"{LOCAL_EXTRA_HINT} ({exc})") from exc


def xllamacpp_available() -> bool:
    """Whether the `local` extra is installed (without loading llama.cpp)."""
    try:
        return importlib.util.find_spec("xllamacpp") is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------------------------- grammars


def rating_scale_of(hints: Mapping[str, Any]) -> tuple[int, int] | None:
    """`hints["rating_scale"]` as (low, high), None when absent; malformed is permanent."""
    scale = hints.get("rating_scale")
    if scale is None:
        return None
    if (
        isinstance(scale, Sequence)
        and not isinstance(scale, str)
        and len(scale) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
        and 0 <= scale[1] - scale[0] < _MAX_SCALE_VALUES
    ):
        return int(scale[0]), int(scale[1])
    raise ProviderPermanent(f"hints['rating_scale'] must be [low, high] integers, not {scale!r}")


def _number_alternatives(low: int, high: int) -> str:
    return " | ".join(f'"{n}"' for n in range(low, high + 1))


def rating_grammar(low: int, high: int, max_chars: int) -> str:
    """GBNF: one line of 1..max_chars characters, a newline, `Rating: N` with low <= N <= high."""
    return (
        'root ::= text "\\nRating: " rating\n'
        f"text ::= [^\\n]{{1,{max_chars}}}\n"
        f"rating ::= {_number_alternatives(low, high)}\n"
    )


def rating_number_grammar(low: int, high: int) -> str:
    """GBNF: only a number of the scale (the second pass, after a prefilled `Rating: `)."""
    return f"root ::= {_number_alternatives(low, high)}\n"


def rating_text_budget(max_tokens: int) -> int:
    """Free-text characters leaving room for `\\nRating: N` in `max_tokens` (≈3 chars a token)."""
    return max(RATING_TEXT_MIN_CHARS, min(RATING_TEXT_MAX_CHARS, 3 * (max_tokens - 8)))


def _compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with llguidance told not to pad JSON with whitespace (small models loop on it)."""
    compact = dict(schema)
    compact.setdefault("x-guidance", {"whitespace_flexible": False})
    return compact


_RATING_LINE = re.compile(r"\nRating: (-?\d+)$")


def _ends_with_rating(text: str, scale: tuple[int, int]) -> bool:
    match = _RATING_LINE.search(text)
    return match is not None and scale[0] <= int(match.group(1)) <= scale[1]


# ---------------------------------------------------------------------------------- the engine


@dataclass
class _Result:
    text: str
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    latency_ms: float
    responses: list[dict[str, Any]] = field(default_factory=list)


class _Engine:
    """One loaded model; every call holds the lock (loading included)."""

    def __init__(
        self, model: LocalModelFile, settings: LocalModelSettings, chat_template: str | None
    ) -> None:
        self.model = model
        self._settings = settings
        self._chat_template = chat_template
        self._lock = threading.Lock()
        self._server: Any = None

    @property
    def loaded(self) -> bool:
        return self._server is not None

    def _load(self) -> Any:
        # Every call: a stat and a cache hit, unless the file changed since it was hashed.
        path = verify_model_file(self.model)
        if self._server is not None:
            return self._server
        xlc = load_xllamacpp()
        params = xlc.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self._settings.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = self._settings.threads
        params.cpuparams_batch.n_threads = self._settings.threads
        params.n_threads_http = 1
        params.warmup = False
        params.offline = True
        params.cache_ram_mib = 0
        params.verbosity = -1
        params.ui = False
        params.endpoint_slots = False
        params.endpoint_metrics = False
        # The loopback listener the native server always opens: nobody else may use it.
        params.api_keys = [secrets.token_urlsafe(32)]
        if self._chat_template is not None:
            params.chat_template = self._chat_template
            params.use_jinja = False
        try:
            self._server = xlc.Server(params)
        except Exception as exc:  # the native server says only "failed to init"
            raise ProviderPermanent(
                f"llama.cpp could not load {path} (model {self.model.name!r}): {exc}; "
                "is it a GGUF model this llama.cpp supports?"
            ) from exc
        return self._server

    def unload(self) -> None:
        with self._lock:
            self._server = None

    def run(self, body: dict[str, Any], rating_scale: tuple[int, int] | None) -> _Result:
        with self._lock:
            server = self._load()
            started = time.perf_counter()
            first = _chat(server, body)
            text, finish, usage = _read(first)
            result = _Result(text, finish, usage[0], usage[1], 0.0, [first])
            if rating_scale is not None:
                if _ends_with_rating(text, rating_scale):
                    # The grammar is complete: nothing more could follow, whatever the budget.
                    result.finish_reason = "stop"
                else:
                    self._finish_rating(server, body, rating_scale, result)
            result.latency_ms = (time.perf_counter() - started) * 1000.0
        return result

    def _finish_rating(
        self,
        server: Any,
        body: dict[str, Any],
        scale: tuple[int, int],
        result: _Result,
    ) -> None:
        """Continue a cut-off rating answer from `Rating: `, the number constrained to `scale`."""
        line = result.text.split("\n", 1)[0].rstrip()
        prefix = f"{line}\nRating: " if line else "Rating: "
        second_body = {
            key: value for key, value in body.items() if key not in ("grammar", "messages")
        }
        second_body["messages"] = [*body["messages"], {"role": "assistant", "content": prefix}]
        second_body["grammar"] = rating_number_grammar(*scale)
        second_body["max_tokens"] = len(str(scale[1])) + 2
        second = _chat(server, second_body)
        number, _, usage = _read(second)
        result.text = prefix + number.strip()
        result.finish_reason = "stop"
        result.input_tokens += usage[0]
        result.output_tokens += usage[1]
        result.responses.append(second)


def _chat(server: Any, body: dict[str, Any]) -> dict[str, Any]:
    try:
        response = server.handle_chat_completions(body)
    except (TypeError, ValueError) as exc:
        raise ProviderPermanent(f"llama.cpp rejected the request: {exc}") from exc
    except Exception as exc:
        raise ProviderTransient(f"llama.cpp failed: {exc}") from exc
    if not isinstance(response, dict):
        raise ProviderTransient(f"llama.cpp returned {type(response).__name__}, not a JSON object")
    error = response.get("error")
    if error is not None:
        raise _classify(error)
    return response


def _classify(error: Any) -> ProviderError:
    if not isinstance(error, dict):
        return ProviderTransient(f"llama.cpp error: {error!r}")
    code = error.get("code")
    status = code if isinstance(code, int) else None
    message = f"llama.cpp: {error.get('message', error)} ({error.get('type', 'error')})"
    if _CONTEXT_ERRORS.search(f"{error.get('type', '')} {error.get('message', '')}"):
        return ProviderPermanent(message, status=status)
    if status is not None and 400 <= status < 500:
        return ProviderPermanent(message, status=status)
    return ProviderTransient(message, status=status)


def _read(response: dict[str, Any]) -> tuple[str, str | None, tuple[int, int]]:
    try:
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        finish = choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ProviderTransient(f"llama.cpp answered without a choice: {response!r}") from exc
    usage = response.get("usage") or {}
    return (
        str(text),
        None if finish is None else str(finish),
        (int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
    )


_engines_lock = threading.Lock()
_engines: dict[tuple[str, int, int, str | None], _Engine] = {}


def _engine_for(model: LocalModelFile, settings: LocalModelSettings) -> _Engine:
    template = _BUILTIN_TEMPLATES.get(model.name) if model.packaged else None
    key = (str(model.path.expanduser().absolute()), settings.n_ctx, settings.threads, template)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _Engine(model, settings, template)
        return engine


def unload_local_models() -> None:
    """Drop every loaded model of this process (the next request loads it again)."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.unload()


# ---------------------------------------------------------------------------------- provider


class LocalProvider:
    """`Provider` for `local:<model>`: the GGUF runs in this process."""

    name = PROVIDER_NAME

    def __init__(self, model_name: str, settings: LocalModelSettings | None = None) -> None:
        self._settings = settings if settings is not None else LocalModelSettings()
        self.model_name = model_name
        self.model = resolve_local_model(model_name, self._settings)
        self._others: dict[str, LocalModelFile] = {}

    def _model_for(self, name: str) -> LocalModelFile:
        if not name or name == self.model_name:
            return self.model
        if name not in self._others:
            self._others[name] = resolve_local_model(name, self._settings)
        return self._others[name]

    async def complete(self, request: CompletionRequest) -> Completion:
        model = self._model_for(request.model)
        max_tokens = request.max_tokens or self._settings.max_tokens
        scale = rating_scale_of(request.hints)
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": max_tokens,
            "stream": False,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_schema is not None:
            body["json_schema"] = _compact_schema(request.json_schema)
            scale = None  # llama.cpp takes one constraint; the schema is what was asked for
        elif scale is not None:
            body["grammar"] = rating_grammar(*scale, rating_text_budget(max_tokens))
        engine = _engine_for(model, self._settings)
        result = await asyncio.to_thread(engine.run, body, scale)
        return Completion(
            text=result.text,
            finish_reason=result.finish_reason,
            usage=Usage(input_tokens=result.input_tokens, output_tokens=result.output_tokens),
            latency_ms=result.latency_ms,
            raw={"model": model.name, "path": str(model.path), "responses": result.responses},
            synthetic=False,
        )

    async def aclose(self) -> None:
        """Nothing to close: the loaded model is shared (see `unload_local_models`)."""


def build_local_provider(model_name: str) -> Provider:
    """The provider of `local:<model_name>`.

    Cheap: checks the name, the file and that the `local` extra is installed; the model is
    verified and loaded by the first request. Raises `ProviderPermanent` saying what to do.
    """
    if not xllamacpp_available():
        raise ProviderPermanent(LOCAL_EXTRA_HINT)
    return LocalProvider(model_name.strip() or DEFAULT_LOCAL_MODEL)
