"""The ground floor: helpers every engine and face may use, importing nothing of the project.

- `ground.files`: private folders (0700), files and lock files (0600), atomic writes.
- `ground.redact`: secrets replaced by `[REDACTED:<kind>]` before anything is stored; the
  rules it applies are in `ground.secret_rules`.
- `ground.jsonbytes`: compact JSON bytes of any parsed value (hashing, persisting).
- `ground.jsonvalues`: walking parsed JSON values (no third-party imports: hooks use it).

What must hold: no module here imports `compress`, `memory`, `ccr` or `ctxmill`, and none
reads `os.environ`; callers pass everything in.
"""
