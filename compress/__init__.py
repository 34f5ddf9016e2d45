"""The per-turn transform: a request in, the same request with old context compressed out.

- `pipeline`: `DEFAULT_STAGES` (the one ordered list of stages), `Chain`, `run`. The runner's
  concerns each have a module: `message_tokens` (token counts), `protected_tail`, `plan` (one
  rendering: the stages applied from a start message on), `protocol_guard` (what every stage's
  output must keep), `epochs` (when old messages are re-decided), `provider_cache` (the
  provider's prompt cache as the engine prices it), `run_report` (what a run did).
- `stage` (the stage contract) and `stages/`: one stage per module, `compress/stages/<name>.py`.
  Helpers stages share: `trimming`, `inputnotes`, `lossy`, `memo`.
- `model`: the canonical request every stage sees; `formats/`: provider request shapes
  (`requests/`), recorded-session readers (`sessions/`) and reported usage, all in one place.
- `vocab/`: the hosts' vocabulary (tool names, files a call touches, error and decision cues,
  injected tags), shared with memory.
- `session` (state that keeps output stable between epochs), `tiers`, `tokens`, `config`
  (`CompressConfig`, built by the faces and passed in; the engine reads no environment).
- `replay/`: the measuring harness (replay of recorded sessions, the cost model); the engine
  never imports it.

Of the project it imports only `ccr/` and `ground/` (never `ctxmill/`: tests/test_layering.py).
"""
