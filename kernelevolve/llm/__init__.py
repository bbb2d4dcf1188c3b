"""LLM access: an OpenAI-compatible client (and a scripted one for tests), response cache,
token/cost accounting, reply parsing, bottleneck diagnosis and prompt building (bytes and FLOPs:
`specs.traffic`).

Nothing here imports `openai` at module level; the client imports it on its first request.
"""

from __future__ import annotations

from kernelevolve.llm.accounting import Accounting, AccountingTotals
from kernelevolve.llm.cache import ResponseCache, cache_key
from kernelevolve.llm.client import (
    LLMClient,
    LLMConfig,
    LLMResponse,
    LLMUnavailable,
    OpenAICompatibleClient,
    ScriptedClient,
)
from kernelevolve.llm.diagnosis import Diagnosis, diagnose
from kernelevolve.llm.parsing import ParsedReply, ParseFailure, parse_reply
from kernelevolve.llm.prompts import MODES, Prompt, PromptInputs, build_prompt, gather_inputs

__all__ = [
    "MODES",
    "Accounting",
    "AccountingTotals",
    "Diagnosis",
    "LLMClient",
    "LLMConfig",
    "LLMResponse",
    "LLMUnavailable",
    "OpenAICompatibleClient",
    "ParseFailure",
    "ParsedReply",
    "Prompt",
    "PromptInputs",
    "ResponseCache",
    "ScriptedClient",
    "build_prompt",
    "cache_key",
    "diagnose",
    "gather_inputs",
    "parse_reply",
]
