"""Before a run starts: does the configured endpoint answer like an OpenAI-compatible API?

One GET of `<base_url>/models` (free on OpenAI, vLLM, SGLang and Ollama). An endpoint that answers with
something that is not JSON is a configuration mistake (a wrong port, a web page, a proxy's error page) and
fails the run at once, in one line. One that does not answer yet is only a warning: the LLM operator keeps
retrying and pauses (a server may still be starting), and the LLM-free operators work meanwhile.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

TIMEOUT_S = 5.0


class EndpointError(ValueError):
    """The endpoint answers, but not as an OpenAI-compatible API."""


def check_endpoint(llm: Mapping[str, Any], timeout_s: float = TIMEOUT_S) -> None:
    base_url = str(llm.get("base_url") or "").rstrip("/")
    if not base_url:
        raise EndpointError(
            "llm.base_url is not set: an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
        )
    request = urllib.request.Request(f"{base_url}/models", headers={"Accept": "application/json"})
    key = os.environ.get(str(llm.get("api_key_env") or ""), "")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (configured URL)
            body = response.read(65536)
    except (
        urllib.error.HTTPError
    ) as exc:  # it answers; /models may need a key or not exist: not ours to judge
        log.debug("llm endpoint %s: GET /models gave HTTP %s", base_url, exc.code)
        return
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        log.warning(
            "llm.base_url=%s does not answer (%s); LLM proposals fail until it does", base_url, reason
        )
        return
    try:
        json.loads(body)
    except ValueError:
        snippet = body[:60].decode("utf-8", "replace").strip()
        raise EndpointError(
            f"llm.base_url={base_url} answered GET /models with something that is not JSON ({snippet!r}): "
            "not an OpenAI-compatible API; valid: the /v1 URL of an OpenAI, vLLM, SGLang or Ollama server"
        ) from None
