"""The local channel: who listens on a loopback port that clients send their requests, and their
API keys, to. The one place that decides whether a listener may receive them.

A listener may when every socket listening on 127.0.0.1:PORT belongs to this user. Linux names
each socket's owner in /proc/net/tcp and tcp6 (every user's sockets, readable by anyone); other
systems (macOS, the BSDs) are asked with `lsof`, which run by an ordinary user sees only that
user's own processes, so there a port that accepts connections while no process of this user
is seen listening on it counts as another user's. What must hold:
- `problem(port)` is None only when nothing listens on the port or this user's program does:
  another user's listener, and one nobody can name (no /proc, no lsof), are refused in one line
  that says what happened and how to move away; it never raises.
- Cheap: one read of /proc/net/tcp (tcp6 too) on Linux, one `lsof` elsewhere (tens of ms);
  nothing is imported but the standard library.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

HOST = "127.0.0.1"
PROC_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
LSOF_PLACES = ("/usr/sbin/lsof", "/usr/bin/lsof", "/sbin/lsof")
"""Where `lsof` lives when PATH (a hook's, an MCP server's) does not lead to it."""
LISTEN = "0A"
"""The state column of a listening socket in /proc/net/tcp."""
MOVE = "`ctxmill install <client> --port N` picks another port"


def proc_uids(port: int, tables: tuple[str, ...] = PROC_TABLES) -> set[int] | None:
    """The uids owning sockets that listen on TCP `port` (any address), from the kernel's tables;
    None when none of the tables can be read (not Linux)."""
    uids, seen = set(), False
    for table in tables:
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for fields in (row.split() for row in rows):  # sl local remote st ... uid at index 7
            if len(fields) > 7 and fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                uids.add(int(fields[7]))
    return uids if seen else None


def lsof_uids(port: int) -> set[int] | None:
    """The uids of the processes `lsof` sees listening on TCP `port` (only this user's, unless run
    as root); None when there is no `lsof` or it cannot be run."""
    import shutil  # only where there is no /proc: a hook's start-up never pays for it

    lsof = shutil.which("lsof") or next((p for p in LSOF_PLACES if os.access(p, os.X_OK)), None)
    if lsof is None:
        return None
    try:
        done = subprocess.run([lsof, "-nP", f"-iTCP:{port}", "-sTCP:LISTEN", "-Fu"], capture_output=True,
                              text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode not in (0, 1):  # 1: nothing found
        return None
    return {int(line[1:]) for line in done.stdout.splitlines() if line[:1] == "u" and line[1:].isdigit()}


def listener_uids(port: int, tables: tuple[str, ...] = PROC_TABLES) -> set[int] | None:
    """The uids of the programs listening on `port`: the kernel's tables, else `lsof`; None when
    this system can tell neither."""
    found = proc_uids(port, tables)
    return found if found is not None else lsof_uids(port)


def accepts(port: int, timeout: float = 1.0) -> bool:
    """Something accepts connections on 127.0.0.1:`port`."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def problem(port: int, tables: tuple[str, ...] = PROC_TABLES) -> str | None:
    """Why the program listening on `port` must not get this user's requests and keys, in one
    line; None when nothing listens there or this user's program does."""
    try:
        kernel = proc_uids(port, tables)
        uids = kernel if kernel is not None else lsof_uids(port)
        others = sorted((uids or set()) - {os.getuid()})
        if others:
            return (f"port {port} is held by a program of another user (uid {others[0]}), which would see your "
                    f"requests and keys: {MOVE}")
        if uids or kernel is not None or not accepts(port):
            return None  # this user's; or nothing listens (the kernel's tables list every user's sockets)
        if uids is None:
            return (f"cannot tell who listens on 127.0.0.1:{port} (no /proc/net/tcp, no lsof here), so your "
                    f"requests and keys are not sent there: {MOVE}")
        return (f"port {port} accepts connections but no program of yours listens there (another user's, "
                f"which would see your requests and keys): {MOVE}")
    except Exception as exc:  # noqa: BLE001 - callers are hooks and MCP servers: never raise, refuse
        return f"cannot tell who listens on 127.0.0.1:{port} ({type(exc).__name__}: {exc}): {MOVE}"


def mine(port: int, tables: tuple[str, ...] = PROC_TABLES) -> bool:
    """This user's program listens on `port` (something does, and `problem` finds nothing wrong)."""
    return accepts(port) and problem(port, tables) is None
