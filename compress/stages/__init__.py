"""The stages, one per module named as the stage: `compress/stages/<name>.py` defines `STAGE`.

Their order is `compress.runner.pipeline.DEFAULT_STAGES`, the one list. Each is a pure function
`(messages, context) -> messages` under the contract of `compress.stagekit.stage`: it writes
originals only through the CCR handle in its context and markers only through `ccr.markers`, and
its module docstring says what it keeps and what must hold. A stage imports no other stage, nor
the runner (shared knowledge lives in `compress/vocab/` and the stage kit, `compress/stagekit/`).
"""
