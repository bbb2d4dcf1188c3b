"""On-disk cache of LLM replies, so a resumed run does not pay twice for the same prompt.

One JSON file per key (``<dir>/<key[:2]>/<key>.json``), written to a temporary name and renamed
into place: concurrent writers from threads or processes never leave a torn entry, and no lock
is needed. The key covers everything that decides the reply (model, messages, temperature) plus
a sample index: the same prompt asked a second time in one run is a second sample, not a replay,
while a resumed run replays its first samples from disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def cache_key(
    model: str, messages: Sequence[Mapping[str, str]], temperature: float | None, sample: int = 0
) -> str:
    payload = json.dumps(
        {
            "model": model,
            "messages": [dict(m) for m in messages],
            "temperature": None if temperature is None else round(float(temperature), 6),
            "sample": int(sample),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    finish_reason: str = "stop"


class ResponseCache:
    """Replies by key under `directory` (for a run: ``<run_dir>/llm_cache``)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedReply | None:
        path = self._path(key)
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            return CachedReply(
                text=str(data["text"]),
                prompt_tokens=int(data.get("prompt_tokens", 0)),
                completion_tokens=int(data.get("completion_tokens", 0)),
                model=str(data.get("model", "")),
                finish_reason=str(data.get("finish_reason", "stop")),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # A damaged entry is a miss: the call is simply paid again and the entry rewritten.
            log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None

    def put(self, key: str, reply: CachedReply) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {
                "text": reply.text,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "model": reply.model,
                "finish_reason": reply.finish_reason,
            },
            ensure_ascii=False,
        )
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json"))
