"""Model names as the tables of model facts spell them.

Clients and gateways name one model many ways: `claude-sonnet-4-5-20250929`,
`anthropic/claude-opus-5-5` (LiteLLM, OpenRouter), `us.anthropic.claude-opus-5-5` and
`openai.gpt-5.6-sol` (Bedrock), `Claude-Opus-4-8`. Tables keyed by model-name prefix (context windows in `compress.tiers`, the
ledger's prices) look a name up by `normalized(model)`.
"""

from __future__ import annotations

import re

_PROVIDER_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?(?:anthropic|openai)\.")
"""Bedrock's `anthropic.` / `openai.` and regional `us.anthropic.` / `apac.anthropic.` prefixes."""

LONG_CONTEXT_SUFFIX = "[1m]"
"""Claude Code's suffix for a model asked to read 1M tokens (`--model sonnet[1m]`,
`claude-opus-4-6[1m]`); on the wire it becomes the `context-1m` beta header."""


def normalized(model: str) -> str:
    """`model` in lower case, without a `vendor/` route or a Bedrock `anthropic.` / `openai.` prefix."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return _PROVIDER_PREFIX.sub("", name)
