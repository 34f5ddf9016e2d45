"""One module per `ctxmill` sub-command; see ctxmill/cli.py."""
