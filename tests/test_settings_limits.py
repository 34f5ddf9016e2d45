"""Numbers TOML allows but no setting means (inf, nan) are one clear error at the edge, never an
OverflowError from deep inside."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxmill.errors import ConfigError
from ctxmill.settings import Settings
from tests.conftest import REPO

EXAMPLE = REPO / "fixtures" / "example-request.json"


@pytest.mark.parametrize("text, read, message", [
    ("[ccr]\nmax_mb = inf", "ccr", "ccr.max_mb must be a finite number, got inf"),
    ("[ccr]\nmax_mb = nan", "ccr", "ccr.max_mb must be a finite number"),
    ("[ccr]\nttl_hours = inf", "ccr", "ccr.ttl_hours must be a finite number, got inf"),
    ("[ccr]\nmax_mb = -inf", "ccr", "ccr.max_mb must be a finite number"),
    ("[compress]\nepoch_horizon = inf", "compress", "compress.epoch_horizon must be a finite number"),
    ("[proxy]\nmax_inflight_mb = inf", "proxy_overrides", "proxy.max_inflight_mb must be a positive number, got inf"),
    ("[proxy]\nclient_timeout = inf", "proxy_overrides", "proxy.client_timeout must be a positive number, got inf"),
])
def test_infinite_settings_are_one_clear_error(tmp_path, monkeypatch, text, read, message):
    """[ccr] and [proxy] are read from the user's own config.toml, the rest from the project's."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    where = tmp_path / "xdg" / "ctxmill" if read in ("ccr", "proxy_overrides") else tmp_path
    (where / "config.toml").write_text(text)
    settings = Settings.load(tmp_path)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        getattr(settings, read)


def test_the_cli_says_it_in_one_line(tmp_path):
    home = tmp_path / ".ctxmill"
    home.mkdir()
    (tmp_path / "d" / "ctxmill").mkdir(parents=True)
    (tmp_path / "d" / "ctxmill" / "config.toml").write_text("[ccr]\nmax_mb = inf\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "d")}
    done = subprocess.run([sys.executable, "-m", "ctxmill", "compress", str(EXAMPLE)], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120)
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1 and "ccr.max_mb must be a finite number" in err, err
