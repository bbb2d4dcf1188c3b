"""The OpenAI-compatible client against a real HTTP server on loopback."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from kernelevolve.llm.accounting import Accounting
from kernelevolve.llm.cache import ResponseCache, cache_key
from kernelevolve.llm.client import LLMConfig, LLMUnavailable, OpenAICompatibleClient, ScriptedClient

try:
    from llm_server import LoopbackLLMServer
except ImportError:  # tests/ imported as a package
    from tests.llm_server import LoopbackLLMServer

pytest.importorskip("openai")

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hello world"}]


def _config(server: LoopbackLLMServer | None = None, **overrides: object) -> LLMConfig:
    values: dict[str, object] = {
        "base_url": server.base_url if server else "http://127.0.0.1:9/v1",
        "model": "test-model",
        "api_key_env": "KERNELEVOLVE_TEST_UNSET_KEY",
        "timeout_s": 5.0,
        "max_retries": 3,
    }
    values.update(overrides)
    return LLMConfig(**values)  # type: ignore[arg-type]


@pytest.fixture
def server():
    with LoopbackLLMServer(["hello back", "second reply", "third reply"]) as srv:
        yield srv


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_plain_call_sends_model_and_messages(server: LoopbackLLMServer) -> None:
    client = OpenAICompatibleClient(_config(server, temperature=0.3, max_tokens=77))
    response = client.complete(MESSAGES)
    assert response.text == "hello back"
    assert not response.cached and response.model == "test-model" and response.latency_s > 0
    body = server.requests[0]
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert body["temperature"] == 0.3 and body["max_tokens"] == 77
    # No key in the environment is fine for a loopback server: the client sends "EMPTY".
    assert server.headers[0]["authorization"] == "Bearer EMPTY"


# The SDK's retries wait 0.5 s, 1 s, 2 s... unless the server sends Retry-After; the scripted
# faults below send a short one to keep the tests quick.
QUICK = 0.01


def test_retries_after_rate_limits_then_succeeds(server: LoopbackLLMServer) -> None:
    server.fail_next(429, times=2, retry_after=QUICK)
    client = OpenAICompatibleClient(_config(server))
    response = client.complete(MESSAGES)
    assert response.text == "hello back"
    assert len(server.requests) == 3
    totals = client.accounting.totals()
    assert (totals.calls, totals.retries, totals.failures) == (1, 2, 0)
    # the latency is the answering attempt's, not the waits before it
    assert response.latency_s < 1.0


def test_retries_server_errors_and_dropped_connections(server: LoopbackLLMServer) -> None:
    server.drop_next()  # no Retry-After: the SDK's own backoff, 0.5 s less jitter for a first retry
    server.fail_next(500, retry_after=QUICK)
    server.fail_next(503, retry_after=QUICK)
    client = OpenAICompatibleClient(_config(server))
    assert client.complete(MESSAGES).text == "hello back"
    assert len(server.requests) == 4
    assert client.accounting.totals().retries == 3


def test_gives_up_after_max_retries(server: LoopbackLLMServer) -> None:
    server.fail_next(500, times=10, retry_after=QUICK)
    client = OpenAICompatibleClient(_config(server, max_retries=2))
    with pytest.raises(LLMUnavailable, match="gave up after 3 attempts.*HTTP 500") as info:
        client.complete(MESSAGES)
    assert info.value.kind == "server_error" and "\n" not in info.value.reason
    assert len(server.requests) == 3
    totals = client.accounting.totals()
    assert (totals.calls, totals.retries, totals.failures) == (0, 2, 1)


def test_client_errors_are_not_retried(server: LoopbackLLMServer) -> None:
    server.fail_next(400, retry_after=QUICK)  # a Retry-After does not make a bad request retryable
    client = OpenAICompatibleClient(_config(server))
    with pytest.raises(LLMUnavailable, match="refused the request: HTTP 400") as info:
        client.complete(MESSAGES)
    assert info.value.kind == "refused"
    assert len(server.requests) == 1
    assert client.accounting.totals().retries == 0


def test_retry_after_header_sets_the_wait(server: LoopbackLLMServer) -> None:
    # 0.8 s is longer than the SDK's first backoff (0.5 s at most): the wait is the server's.
    server.fail_next(429, retry_after=0.8)
    client = OpenAICompatibleClient(_config(server, max_retries=1))
    started = time.monotonic()
    assert client.complete(MESSAGES).text == "hello back"
    assert time.monotonic() - started >= 0.8
    assert len(server.requests) == 2


def test_retry_after_beyond_the_limit_is_not_waited_for(server: LoopbackLLMServer) -> None:
    # The SDK honours Retry-After up to two minutes; a longer one fails at once, as rate-limited.
    server.fail_next(429, retry_after=600)
    client = OpenAICompatibleClient(_config(server))
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="gave up after 1 attempt;.*HTTP 429") as info:
        client.complete(MESSAGES)
    assert info.value.kind == "rate_limited"
    assert time.monotonic() - started < 5 and len(server.requests) == 1


def test_closed_port_gives_unavailable() -> None:
    config = _config(None, base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_retries=1)
    client = OpenAICompatibleClient(config)
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="connection failed") as info:
        client.complete(MESSAGES)
    assert "gave up after 2 attempts" in info.value.reason
    assert time.monotonic() - started < 5
    assert client.accounting.totals().failures == 1


def test_hanging_server_times_out(server: LoopbackLLMServer) -> None:
    server.hang_next(3.0, times=2)
    client = OpenAICompatibleClient(_config(server, timeout_s=0.3, max_retries=1))
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="no answer within 0.3 s"):
        client.complete(MESSAGES)
    assert time.monotonic() - started < 2.5


def test_missing_key_for_remote_endpoint_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELEVOLVE_TEST_UNSET_KEY", raising=False)
    client = OpenAICompatibleClient(_config(None, base_url="https://llm.example.invalid/v1"))
    with pytest.raises(LLMUnavailable, match="KERNELEVOLVE_TEST_UNSET_KEY is not set"):
        client.complete(MESSAGES)


def test_key_comes_from_the_named_variable(
    server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELEVOLVE_TEST_KEY", "sk-test-123")
    client = OpenAICompatibleClient(_config(server, api_key_env="KERNELEVOLVE_TEST_KEY"))
    client.complete(MESSAGES)
    assert server.headers[0]["authorization"] == "Bearer sk-test-123"


def test_cache_avoids_a_second_request(server: LoopbackLLMServer, tmp_path: Path) -> None:
    config = _config(server, price_per_1k_input=1.0, price_per_1k_output=1.0)
    client = OpenAICompatibleClient(config, cache=ResponseCache(tmp_path))
    first = client.complete(MESSAGES)
    second = client.complete(MESSAGES)
    assert len(server.requests) == 1
    assert not first.cached and second.cached and second.text == first.text
    assert (second.prompt_tokens, second.completion_tokens) == (first.prompt_tokens, first.completion_tokens)
    totals = client.accounting.totals()
    assert totals.calls == 1 and totals.cached_hits == 1
    assert totals.cost_usd == pytest.approx((first.prompt_tokens + first.completion_tokens) / 1000)

    # A resumed run (a new client on the same folder) replays from disk too.
    resumed = OpenAICompatibleClient(config, cache=ResponseCache(tmp_path))
    assert resumed.complete(MESSAGES).cached
    assert resumed.accounting.totals().cost_usd == 0.0
    assert len(server.requests) == 1

    # A second sample of the same prompt, another temperature or another model is a new request.
    assert client.complete(MESSAGES, sample=1).text == "second reply"
    assert client.complete(MESSAGES, temperature=0.0).text == "third reply"
    assert len(server.requests) == 3


def test_cache_key_covers_model_messages_temperature_and_sample() -> None:
    base = cache_key("m", MESSAGES, 0.7)
    assert base == cache_key("m", [dict(m) for m in MESSAGES], 0.7)
    assert len({base, cache_key("n", MESSAGES, 0.7), cache_key("m", MESSAGES[:1], 0.7)}) == 3
    assert base not in {cache_key("m", MESSAGES, 0.2), cache_key("m", MESSAGES, 0.7, sample=1)}


def test_damaged_cache_entry_is_a_miss(server: LoopbackLLMServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    client = OpenAICompatibleClient(_config(server), cache=cache)
    client.complete(MESSAGES)
    entry = next(tmp_path.glob("*/*.json"))
    entry.write_text("{not json")
    again = client.complete(MESSAGES)
    assert not again.cached and len(server.requests) == 2
    assert len(cache) == 1


def test_accounting_counts_tokens_and_cost(server: LoopbackLLMServer) -> None:
    config = _config(server, price_per_1k_input=2.0, price_per_1k_output=10.0)
    client = OpenAICompatibleClient(config)
    a = client.complete(MESSAGES)
    b = client.complete([{"role": "user", "content": "one two three"}])
    # The loopback server counts words: "be brief" + "say hello world" = 5; replies 2 words each.
    assert (a.prompt_tokens, a.completion_tokens, b.prompt_tokens, b.completion_tokens) == (5, 2, 3, 2)
    data = client.accounting.to_json()
    assert data["calls"] == 2 and data["prompt_tokens"] == 8 and data["completion_tokens"] == 4
    assert data["cost_usd"] == pytest.approx(8 * 2.0 / 1000 + 4 * 10.0 / 1000)
    assert client.accounting.cost_usd == pytest.approx(data["cost_usd"])


def test_concurrency_limit_holds_across_threads() -> None:
    with LoopbackLLMServer(lambda body: "ok", delay_s=0.15) as srv:
        client = OpenAICompatibleClient(_config(srv, concurrency=2))
        threads = [
            threading.Thread(target=client.complete, args=(MESSAGES,), kwargs={"sample": i}) for i in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(srv.requests) == 6
        assert srv.max_in_flight == 2
        assert client.accounting.totals().calls == 6


def test_accounting_is_thread_safe() -> None:
    accounting = Accounting()

    def work() -> None:
        for _ in range(1000):
            accounting.record_call(1, 2, 0.001, 0.0)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    totals = accounting.totals()
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (4000, 4000, 8000)
    assert totals.cost_usd == pytest.approx(4.0)


def test_scripted_client_replays_and_runs_out(tmp_path: Path) -> None:
    client = ScriptedClient(["a b c", LLMUnavailable("scripted outage")], cache=ResponseCache(tmp_path))
    assert client.complete(MESSAGES).text == "a b c"
    assert client.complete(MESSAGES).cached  # same prompt, sample 0: from the cache
    with pytest.raises(LLMUnavailable, match="scripted outage"):
        client.complete(MESSAGES, sample=1)
    with pytest.raises(LLMUnavailable, match="no replies left"):
        client.complete(MESSAGES, sample=2)
    assert len(client.calls) == 3
    totals = client.accounting.totals()
    assert (totals.calls, totals.cached_hits, totals.failures, totals.completion_tokens) == (1, 1, 2, 3)


def test_scripted_client_can_answer_from_the_request() -> None:
    client = ScriptedClient(lambda messages: messages[-1]["content"].upper())
    assert client.complete(MESSAGES).text == "SAY HELLO WORLD"


def test_config_from_mapping_names_valid_keys() -> None:
    config = LLMConfig.from_mapping({"model": "m", "base_url": "http://localhost:8000/v1"})
    assert config.model == "m" and config.is_local
    assert not LLMConfig(base_url="https://api.openai.com/v1").is_local
    with pytest.raises(ValueError, match="unknown llm config keys \\['modle'\\].*valid:.*model"):
        LLMConfig.from_mapping({"modle": "m"})
    with pytest.raises(ValueError, match="concurrency"):
        LLMConfig(concurrency=0)


def test_reasoning_model_settings(server: LoopbackLLMServer) -> None:
    config = _config(server, temperature=None, max_tokens=99, max_tokens_param="max_completion_tokens")
    OpenAICompatibleClient(config).complete(MESSAGES)
    body = server.requests[0]
    assert "temperature" not in body and "max_tokens" not in body and body["max_completion_tokens"] == 99
    with pytest.raises(ValueError, match="max_tokens_param"):
        LLMConfig(max_tokens_param="tokens")


def test_truncated_reply_is_asked_again_with_room_to_finish(server: LoopbackLLMServer) -> None:
    long = " ".join(f"w{i}" for i in range(30))
    with LoopbackLLMServer(lambda body: long) as srv:
        client = OpenAICompatibleClient(_config(srv, max_tokens=20))
        response = client.complete(MESSAGES)
        # The server stops at 20 words ("length"); the second request, with 40, gets all 30.
        assert [r["max_tokens"] for r in srv.requests] == [20, 40]
        assert response.text == long and not response.truncated and response.requests == 2
        assert response.completion_tokens == 20 + 30
        totals = client.accounting.totals()
        assert (totals.calls, totals.truncated, totals.completion_tokens) == (2, 1, 50)
        # Without the retry the cut reply comes back flagged, and the cache keeps the flag.
        flagged = OpenAICompatibleClient(_config(srv, max_tokens=20, retry_truncated=False))
        short = flagged.complete(MESSAGES, sample=1)
        assert short.truncated and short.text == " ".join(long.split()[:20]) and len(srv.requests) == 3


def test_truncation_flag_survives_the_cache(tmp_path: Path) -> None:
    with LoopbackLLMServer(lambda body: "one two three four") as srv:
        config = _config(srv, max_tokens=2, retry_truncated=False)
        OpenAICompatibleClient(config, cache=ResponseCache(tmp_path)).complete(MESSAGES)
        again = OpenAICompatibleClient(config, cache=ResponseCache(tmp_path)).complete(MESSAGES)
    assert again.cached and again.truncated and again.requests == 0


def test_failures_are_counted_by_kind(server: LoopbackLLMServer) -> None:
    client = OpenAICompatibleClient(_config(server, max_retries=0))
    server.fail_next(400)
    server.fail_next(503)
    server.fail_next(429)
    for _ in range(3):
        with pytest.raises(LLMUnavailable):
            client.complete(MESSAGES)
    dead = OpenAICompatibleClient(
        _config(None, base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_retries=0)
    )
    with pytest.raises(LLMUnavailable) as refused:
        dead.complete(MESSAGES)
    assert refused.value.kind == "connection"
    totals = client.accounting.totals()
    assert totals.failures == 3
    assert dict(totals.failures_by_kind) == {"refused": 1, "server_error": 1, "rate_limited": 1}


def test_ledger_keeps_totals_across_sessions(server: LoopbackLLMServer, tmp_path: Path) -> None:
    ledger = tmp_path / "llm_calls.jsonl"
    first = OpenAICompatibleClient(_config(server), accounting=Accounting(ledger))
    first.complete(MESSAGES)
    first.complete(MESSAGES, sample=1)
    # A resumed run: a new process, the same ledger.
    second = OpenAICompatibleClient(_config(server), accounting=Accounting(ledger))
    assert second.accounting.totals().calls == 2 and second.accounting.session_totals().calls == 0
    second.complete(MESSAGES, sample=2)
    data = second.accounting.to_json()
    assert data["calls"] == 3 and data["this_session"]["calls"] == 1 and data["sessions"] == 2
    assert data["prompt_tokens"] == 3 * 5 and data["completion_tokens"] == 2 + 2 + 2
    assert second.accounting.started == first.accounting.started
    # A torn last line (a kill mid-write) is skipped, not fatal.
    with open(ledger, "a") as handle:
        handle.write('{"event": "call", "prompt_')
    after_kill = Accounting(ledger)
    after_kill.record_call(1, 1, 0.0, 0.0)
    assert after_kill.totals().calls == 4 and after_kill.sessions == 3
