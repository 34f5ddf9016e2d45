"""The runner: one request through the stages, its epoch decided and its session recorded.

- `pipeline`: `DEFAULT_STAGES` (the one ordered list of stages), `Chain`, `run` (the one entry the
  faces and replay/ call: parse, count, pick the tier and the protected tail, plan, decide on an
  epoch, commit originals to CCR, record the session; on any failure the original comes back).
- Each of the runner's concerns has a module: `message_tokens` (input tokens of canonical
  messages), `protected_tail` (what is never compressed), `plan` (one rendering: the active
  stages applied from a start message on, each output checked by `protocol_guard`), `epochs`
  (when old messages are re-decided, and from where), `trial` (an epoch trial built and judged,
  during the run or after the answer) and `run_report` (what a run did).

Must hold: nothing else in compress/ imports the runner (the stages, the stage kit, the session
state, formats/ and vocab/ sit below it: tests/test_layering.py).
"""
