"""Chat-completion clients: any OpenAI-compatible endpoint, and a scripted one for tests.

Both share `complete()`: cache lookup, the request, token/cost accounting and the cache write,
and one more request with twice the room when a reply was cut off at the token limit
(finish_reason "length"). Only the request differs. `openai` is imported on first use so
`import kernelevolve` works without it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlparse

from kernelevolve.llm.accounting import Accounting, call_cost_usd
from kernelevolve.llm.cache import CachedReply, ResponseCache, cache_key

log = logging.getLogger(__name__)

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_SERVER_STATUS = {408, 409}  # retried by the SDK like every 5xx; 429 is its own kind
_TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class LLMConfig:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "default"
    api_key_env: str = "OPENAI_API_KEY"  # name of the environment variable, never the key itself
    temperature: float | None = 0.7  # None: not sent (some reasoning models accept only their default)
    max_tokens: int = 8192
    max_tokens_param: str = "max_tokens"  # "max_completion_tokens" for OpenAI reasoning models
    timeout_s: float = 300.0  # per attempt
    max_retries: int = 4  # extra attempts after the first (the openai SDK's retries and backoff)
    concurrency: int = 4  # requests in flight at once, across threads
    price_per_1k_input: float = 0.0  # USD
    price_per_1k_output: float = 0.0
    retry_truncated: bool = True  # a reply cut off at max_tokens is asked once more with twice the room

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"llm.concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"llm.max_retries must be >= 0, got {self.max_retries}")
        if self.timeout_s <= 0:
            raise ValueError(f"llm.timeout_s must be > 0, got {self.timeout_s}")
        if self.max_tokens < 1:
            raise ValueError(f"llm.max_tokens must be >= 1, got {self.max_tokens}")
        if self.max_tokens_param not in _TOKEN_PARAMS:
            raise ValueError(
                f"llm.max_tokens_param must be one of {_TOKEN_PARAMS}, got {self.max_tokens_param!r}"
            )

    @staticmethod
    def from_mapping(data: Mapping[str, Any]) -> LLMConfig:
        """From a config section; an unknown key raises and names the valid ones."""
        valid = {f.name for f in fields(LLMConfig)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(f"unknown llm config keys {unknown}; valid: {', '.join(sorted(valid))}")
        return LLMConfig(**dict(data))

    @property
    def is_local(self) -> bool:
        host = urlparse(self.base_url).hostname or ""
        return host in _LOCAL_HOSTS or host.endswith(".localhost")


@dataclass(frozen=True)
class LLMResponse:
    text: str
    prompt_tokens: int  # summed over the requests behind this reply (a truncated first try included)
    completion_tokens: int
    cached: bool
    latency_s: float
    model: str
    finish_reason: str = "stop"  # "length": cut off at the token limit
    requests: int = 1  # 2 when a truncated reply was asked again with more room; 0 from the cache

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


# Why an endpoint did not answer, for the run's health summary.
UNAVAILABLE_KINDS = ("timeout", "connection", "server_error", "rate_limited", "refused", "malformed", "setup")


class LLMUnavailable(RuntimeError):
    """The endpoint could not answer (after retries where retrying made sense). `kind` is one of
    UNAVAILABLE_KINDS."""

    def __init__(self, reason: str, kind: str = "connection") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


@runtime_checkable
class LLMClient(Protocol):
    config: LLMConfig
    accounting: Accounting

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample: int = 0,
    ) -> LLMResponse: ...


def _rough_tokens(text: str) -> int:
    # Used only when a server omits `usage`; ~4 characters per token is the usual rule of thumb.
    return max(1, len(text) // 4) if text else 0


class _ClientBase:
    """Cache, accounting and the public `complete`; subclasses implement `_request`."""

    def __init__(
        self, config: LLMConfig, cache: ResponseCache | None = None, accounting: Accounting | None = None
    ) -> None:
        self.config = config
        self.cache = cache
        self.accounting = accounting if accounting is not None else Accounting()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample: int = 0,
    ) -> LLMResponse:
        """One chat completion. `sample` numbers repeated asks of the same prompt (cache key). A reply
        cut off at the token limit is asked for once more with twice the room (`retry_truncated`);
        if that fails or is cut off too, the truncated reply is returned (`truncated` says so)."""
        temp = self.config.temperature if temperature is None else temperature
        key = cache_key(self.config.model, messages, temp, sample)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.accounting.record_cached()
                return LLMResponse(
                    hit.text,
                    hit.prompt_tokens,
                    hit.completion_tokens,
                    True,
                    0.0,
                    hit.model,
                    hit.finish_reason,
                    0,
                )
        budget = max_tokens or self.config.max_tokens
        response = self._counted(messages, temp, budget)
        if response.truncated and self.config.retry_truncated:
            log.debug("LLM reply cut off at %d tokens; asking again with %d", budget, 2 * budget)
            try:
                longer = self._counted(messages, temp, 2 * budget)
            except LLMUnavailable as exc:
                log.debug("the longer request failed (%s); keeping the truncated reply", exc.reason)
            else:
                response = replace(
                    longer,
                    prompt_tokens=response.prompt_tokens + longer.prompt_tokens,
                    completion_tokens=response.completion_tokens + longer.completion_tokens,
                    latency_s=response.latency_s + longer.latency_s,
                    requests=2,
                )
        if self.cache is not None:
            reply = CachedReply(
                response.text,
                response.prompt_tokens,
                response.completion_tokens,
                response.model,
                response.finish_reason,
            )
            self.cache.put(key, reply)
        return response

    def _counted(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int
    ) -> LLMResponse:
        """One request, with its tokens, cost and latency (or its failure) in the accounting."""
        try:
            response = self._request(messages, temperature, max_tokens)
        except LLMUnavailable as exc:
            self.accounting.record_failure(exc.kind)
            raise
        cost = call_cost_usd(
            response.prompt_tokens,
            response.completion_tokens,
            self.config.price_per_1k_input,
            self.config.price_per_1k_output,
        )
        self.accounting.record_call(
            response.prompt_tokens,
            response.completion_tokens,
            cost,
            response.latency_s,
            truncated=response.truncated,
        )
        return response

    def _request(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int
    ) -> LLMResponse:
        raise NotImplementedError


class OpenAICompatibleClient(_ClientBase):
    """Chat completions against OpenAI, vLLM, SGLang, Ollama... The openai SDK retries (timeouts,
    dropped connections, 408/409/429/5xx; exponential backoff with jitter, Retry-After honoured up to
    its limit); we count its attempts and turn what is left into `LLMUnavailable`."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        cache: ResponseCache | None = None,
        accounting: Accounting | None = None,
    ) -> None:
        super().__init__(config, cache, accounting)
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._sdk_client: Any = None
        self._sdk_lock = threading.Lock()
        # Each HTTP request the SDK sends, from the calling thread (the client is synchronous):
        # attempts per call, and when the last one started.
        self._attempts = threading.local()

    def _api_key(self) -> str:
        if not self.config.api_key_env:
            return "EMPTY"
        key = os.environ.get(self.config.api_key_env, "")
        if key:
            return key
        if self.config.is_local:
            return "EMPTY"  # local servers (vLLM, SGLang, Ollama) accept any key
        raise LLMUnavailable(
            f"environment variable {self.config.api_key_env} is not set (needed for {self.config.base_url})",
            "setup",
        )

    def _client(self) -> Any:
        with self._sdk_lock:
            if self._sdk_client is None:
                try:
                    import openai
                except ImportError as exc:
                    raise LLMUnavailable(
                        "the openai package is not installed (pip install 'kernelevolve[llm]')", "setup"
                    ) from exc
                # The SDK's HTTP layer logs every request at INFO; unless the user set a level for
                # it, keep it to warnings so a run's log shows our messages, not one line per call.
                for name in ("httpx", "httpx2"):
                    if logging.getLogger(name).level == logging.NOTSET:
                        logging.getLogger(name).setLevel(logging.WARNING)
                # Attempts are counted by a request hook on the SDK's own HTTP client (its
                # defaults kept): it sees every retry, whatever the SDK's log says or its level.
                http_client = openai.DefaultHttpxClient(event_hooks={"request": [self._on_request]})
                self._sdk_client = openai.OpenAI(
                    api_key=self._api_key(),
                    base_url=self.config.base_url,
                    timeout=self.config.timeout_s,
                    max_retries=self.config.max_retries,
                    http_client=http_client,
                )
            return self._sdk_client

    def close(self) -> None:
        """Release the HTTP connection pool (a later call opens a new one)."""
        with self._sdk_lock:
            if self._sdk_client is not None:
                self._sdk_client.close()
                self._sdk_client = None

    def _on_request(self, request: Any) -> None:
        self._attempts.count = getattr(self._attempts, "count", 0) + 1
        self._attempts.started = time.perf_counter()

    def _request(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int
    ) -> LLMResponse:
        client = self._client()  # first: raises LLMUnavailable when openai is not installed
        import openai

        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            self.config.max_tokens_param: max_tokens,
        }
        if temperature is not None:
            request["temperature"] = temperature
        self._attempts.count = 0
        last, kind = "", "connection"
        try:
            with self._slots:
                self._attempts.started = time.perf_counter()
                completion = client.chat.completions.create(**request)
            # latency of the attempt that answered, not of the failed ones and waits before it
            return self._to_response(completion, time.perf_counter() - self._attempts.started)
        except openai.APIStatusError as exc:
            status = exc.status_code
            last = f"HTTP {status}: {_short(exc.message)}"
            if status != 429 and status < 500 and status not in _SERVER_STATUS:
                raise LLMUnavailable(
                    f"{self.config.base_url} refused the request: {last}", "refused"
                ) from exc
            kind = "rate_limited" if status == 429 else "server_error"
        except openai.APITimeoutError:
            last, kind = f"no answer within {self.config.timeout_s:g} s", "timeout"
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            last = f"connection failed: {_short(str(cause)) or type(cause).__name__}"
            kind = "connection"
        except (openai.APIResponseValidationError, ValueError) as exc:  # JSONDecodeError is a ValueError
            # not a chat completion at all: the SDK does not retry it (asking again gets the same answer)
            raise LLMUnavailable(
                f"{self.config.base_url} answered with something that is not an OpenAI chat completion "
                f"({type(exc).__name__}: {_short(str(exc))}); is it an OpenAI-compatible endpoint?",
                "malformed",
            ) from None
        finally:
            for _ in range(self._attempts.count - 1):
                self.accounting.record_retry()
        attempts = max(1, self._attempts.count)
        raise LLMUnavailable(
            f"{self.config.base_url}: gave up after {attempts} attempt{'s' if attempts > 1 else ''}; "
            f"last error: {last}",
            kind,
        )

    def _to_response(self, completion: Any, latency_s: float) -> LLMResponse:
        choices = getattr(completion, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        finish_reason = str(getattr(choices[0], "finish_reason", None) or "stop") if choices else "stop"
        usage = getattr(completion, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        if usage is None:
            completion_tokens = _rough_tokens(text)
        model = str(getattr(completion, "model", "") or self.config.model)
        return LLMResponse(text, prompt_tokens, completion_tokens, False, latency_s, model, finish_reason)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


Reply = str | LLMUnavailable
Script = Sequence[Reply] | Callable[[list[dict[str, str]]], Reply]


class ScriptedClient(_ClientBase):
    """Replays replies in order (or computes them from the messages): the client for tests.

    A reply that is an `LLMUnavailable` instance is raised instead, to script outages.
    Token counts are whitespace word counts so accounting has something real to add up.
    """

    def __init__(
        self,
        script: Script,
        config: LLMConfig | None = None,
        *,
        cache: ResponseCache | None = None,
        accounting: Accounting | None = None,
    ) -> None:
        super().__init__(config or LLMConfig(model="scripted"), cache, accounting)
        self._script = script
        self._lock = threading.Lock()
        self._next = 0
        self.calls: list[list[dict[str, str]]] = []

    def _request(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int
    ) -> LLMResponse:
        request = [dict(m) for m in messages]
        with self._lock:
            self.calls.append(request)
            if callable(self._script):
                reply: Reply = self._script(request)
            elif self._next < len(self._script):
                reply = self._script[self._next]
                self._next += 1
            else:
                reply = LLMUnavailable("scripted client: no replies left", "server_error")
        if isinstance(reply, LLMUnavailable):
            raise reply
        prompt_tokens = sum(len(m.get("content", "").split()) for m in request)
        return LLMResponse(reply, prompt_tokens, len(reply.split()), False, 0.0, self.config.model)
