"""Replay recorded sessions through the pipeline and measure them; not part of the engine.

`runner.replay` drives it; `pricing` prices each side's requests with the prompt-cache model
of `costmodel`; `retention` checks what must survive compression; `usage` compares the model
with the usage a recording reports. Nothing in the engine imports this package.
"""
