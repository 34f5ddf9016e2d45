"""The local dashboard: savings over time, each session's request sizes, where the savings came
from, expansions, and a memory browser (`ctxmill.dashboard.app`), charted with Chart.js (vendored
in static/, MIT, with its license). `ctxmill dashboard` serves it; the proxy mounts it at
`/ctxmill/`; `ctxmill replay --html` writes it standalone (`ctxmill.dashboard.replay_page`)."""
