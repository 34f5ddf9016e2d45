"""Replay recorded sessions through the pipeline and measure them; not part of the engine.

`runner.replay` drives it; `pricing` prices each side's requests with the prompt-cache model
of `costmodel`; `retention` checks what must survive compression; `usage` compares the model
with the usage a recording reports; `needed` counts the lines the agent later needed; `cap`
(the decide-once cap) and `headroom_peer` (headroom-ai, run in its own venv through the
standalone script `headroom_worker.py`, which sets that process's environment) are the sides
compared with ctxmill. Nothing in the engine imports this package.
"""
