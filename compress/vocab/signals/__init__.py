"""What text signals, in English and Chinese: one set of patterns for the stages and memory alike.

- `errors`: error lines in tool output, failed results, JSON items reporting an error, and the
  most telling line of a failed result.
- `cues`: cues of decisions, constraints, fixes, next steps and critical notes in prose; the
  stages read only `DECISION_KINDS`.
- `statements`: the checkpoint's reading of a sentence (a decision stated, not chatter, a
  question or a pending choice; a constraint; a next step; a proposal and its acceptance).

Import the module you need; this package imports none of them (hooks keep imports lazy).
"""
