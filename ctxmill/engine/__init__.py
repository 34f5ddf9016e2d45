"""The engine: a long-lived local ctxmill process that runs the pipeline for host plugins.

OpenCode's plugin (`ctxmill/opencode_plugin/ctxmill.js`) cannot afford a Python start per turn,
so it starts `ctxmill engine` once (on demand) and sends each turn's messages to it over a
private Unix socket (`server.py`); `opencode.py` maps OpenCode's messages onto the pipeline and
keeps each session's state.
"""
