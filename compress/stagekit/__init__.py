"""The stage kit: the contract every stage is written against, and what stages share.

- `stage`: the `Stage` record and a stage's context (what it may change, the CCR handle).
- `inputnotes`: large strings of a tool input replaced by one-line CCR notes (the two stages that
  may edit inputs); `lossy`: accepting a rewrite that writes its own markers.
- `kept_lines`: which lines of a long tool output are kept, per tool kind, and how the cut is
  rendered; `output_cut`: how a long tool output is cut (`TrimOptions`, `trimmed`), shared by the
  stages that cut outputs; `line_numbers`: numbered-read prefixes, and thinning them.
- `memo`: memos for pure results (the runner's token counts and replay/ use them too).

Must hold: the kit imports no stage (`compress.stages`), nor the runner or the session state
(tests/test_layering.py), and does no I/O but through the CCR handle a stage is given.
"""
