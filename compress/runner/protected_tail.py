"""The protected tail: the newest messages, which no stage compresses.

It holds at least `protect_tail_turns` model replies (turns) and grows until it holds
`protect_tail_tokens` tokens or `protect_tail_blocks` content blocks (0: no block limit),
whichever comes first; it always holds the latest model reply, from its first message.
"""

from __future__ import annotations

from compress.config import CompressConfig
from compress.model import Message, opens_turn


def tail_start(messages: list[Message], tokens: list[int], blocks: list[int], config: CompressConfig) -> int:
    """Index of the first message of the protected tail; `tokens` and `blocks` (as the provider
    counts them) per message."""
    c = config
    acc = turns = nblocks = 0
    i = len(messages)
    while i > 0 and not (turns >= c.protect_tail_turns and (
            acc >= c.protect_tail_tokens or (c.protect_tail_blocks and nblocks >= c.protect_tail_blocks))):
        i -= 1
        acc += tokens[i]
        nblocks += blocks[i]
        turns += opens_turn(messages, i)
    last_reply = max((j for j in range(len(messages)) if opens_turn(messages, j)), default=len(messages))
    return min(i, last_reply)
