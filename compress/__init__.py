"""The per-turn transform: a request in, the same request with old context compressed out.

- `runner/`: `pipeline` (`DEFAULT_STAGES`, the one ordered list of stages; `Chain`; `run`) and
  the runner's concerns, a module each: `message_tokens` (token counts), `protected_tail`,
  `plan` (one rendering: the stages applied from a start message on), `protocol_guard` (what
  every stage's output must keep), `epochs` (when old messages are re-decided), `trial` (an
  epoch trial, judged during the run or after the answer), `run_report` (what a run did).
- `stages/`: one stage per module, `compress/stages/<name>.py`; `stagekit/`: the stage contract
  (`stage`) and what stages share (`kept_lines`, `output_cut`, `inputnotes`, `lossy`,
  `line_numbers`, `memo`).
- `state/`: the session state that keeps output stable between epochs (`session`, `sealed`,
  `session_store`).
- `model`: the canonical request every stage sees; `formats/`: provider request shapes
  (`requests/`), recorded-session readers (`sessions/`) and reported usage, all in one place.
- `vocab/`: the hosts' vocabulary (tool names, files a call touches, error and decision cues,
  injected tags), shared with memory.
- `tiers` (token-pressure tiers and context windows), `provider_cache` (the provider's prompt
  cache as the engine prices it), `model_prices`, `model_names` (one model's many spellings),
  `token_counters` (the estimator and exact counters of text), `config` (`CompressConfig`,
  built by the faces and passed in; the engine reads no environment). Every stage imports
  `tiers`, so these stay at the top.
- `replay/`: the measuring harness (replay of recorded sessions, the cost model); the engine
  never imports it.

Must hold (tests/test_layering.py): of the project it imports only `ccr/` and `ground/` (never
`ctxmill/`); nothing in it outside `runner/` imports the runner; the stage kit imports no stage
and no session state; the session state imports nothing else of compress/.
"""
