"""The faces' errors: problems `ctxmill.cli.main` reports as one line on stderr with exit code 2."""


class CliError(Exception):
    """A usage or input problem reported as one line on stderr with exit code 2."""



class ConfigError(CliError):
    """`config.toml` is unreadable or has an unknown key or a wrong type (one line naming the key)."""
