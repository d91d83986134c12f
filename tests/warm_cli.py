"""The ``trinitylake`` command, each run a process of its own forked from a warm one.

Why: the tests that run the command as users do (tests/clients/test_client_shell.py,
tests/cli/test_scripts.py and test_quickstart.py, the console blocks of tests/docs) started
a fresh interpreter per command, and ~0.4-0.6 s of its CPU went to importing the package,
DuckDB, sqlglot, PyIceberg and pyarrow again, before the command did anything.

How: a *server* (this file run as ``python warm_cli.py --warm-cli-server ADDRESS``) imports the
command's modules (:data:`PRELOAD`), starts no thread and listens on a Unix socket. A
*client* (this file run as ``python -S -I warm_cli.py ARGS...``: the standard library only,
~15 ms) sends its arguments, working directory and environment, with its standard input,
output and error (SCM_RIGHTS). The server forks a *keeper* per client, which forks the
*command*: the command takes those three descriptors, the directory, the environment and
``sys.argv = ["trinitylake", *ARGS]``, makes new ``sys.stdin``, ``sys.stdout`` and
``sys.stderr`` over them as a fresh interpreter would (encoding, line buffering on a
terminal, PYTHONUNBUFFERED), and runs ``trinitylake_dbapi.cli.run()``, the console
script's entry point: it exits as the command does, atexit handlers included. The keeper
waits for it and sends its exit status to the client, which exits with it (killed by a
signal: the client kills itself with that signal).

Rules:
  WC1. The command is a separate process with its own descriptors, directory and
       environment: what it prints, reads and returns is the command's, through real pipes
       (or whatever the client had). Only the imports are shared, done before any fork.
  WC2. The server forks with one Python thread (checked after each import): nothing that
       runs statements (no DuckDB database, no fsspec session) exists before a fork. The
       native threads pyarrow starts at import (jemalloc's background thread, one of
       Arrow's) are fork-safe, as for tests/reliability/zygote.py and warm_processes.py.
  WC3. Nothing outlives its owner: the server exits when the test process that started it
       closes its standard input (or dies); a keeper whose client went away (a timeout
       killed it) kills its command.

What it does not test: the command's own imports (tests/dbapi/test_cold_imports.py and
test_scripts.py's sqlglot check run fresh interpreters), the installed console script
(tests/cli/test_cli.py runs it) and a controlling terminal: a command on a pseudo-terminal
(tests/cli/test_shell.py's pexpect sessions) reads and writes it through the passed
descriptors, and gets SIGINT, SIGTERM, SIGHUP and SIGQUIT forwarded by the client, but the
terminal is not its controlling one (less, which opens /dev/tty, runs in a fresh
interpreter's session: test_the_default_pager_is_less).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import threading
from typing import Any

#: What the server imports (their own imports follow): the command, the SQL engine, the
#: Iceberg table layer, verify, and what a first statement imports lazily.
PRELOAD = (
    "trinitylake_dbapi.cli", "trinitylake_dbapi.cli.shell", "trinitylake_dbapi.connection",
    "trinitylake_dbapi.sql.execute", "trinitylake_dbapi.sql.query", "trinitylake_dbapi.sql.plain",
    "trinitylake_dbapi.iceberg.tables", "trinitylake_dbapi.iceberg.deletes",
    "trinitylake_dbapi.iceberg.compaction", "trinitylake_dbapi.verify", "trinitylake_dbapi.maintenance",
    "duckdb", "pyiceberg.catalog",
)  # fmt: skip

#: What the server imports besides before the first fork for a script (SCRIPT_FLAG) or a
#: ``python -m`` module (MODULE_FLAG): what the docs' python blocks (tests/docs/_worker.py
#: runs warm too) and their ``alembic`` commands import. The command itself imports none
#: of it, and a server that only ever runs the command (most of them: one per test
#: process) spared ~0.9 s of CPU.
SCRIPT_PRELOAD = ("pandas", "sqlalchemy", "trinitylake_sqlalchemy", "alembic.config", "alembic.command")

#: What the server imports before the first fork for ``python -m NAME`` (MODULE_FLAG), the
#: first time a client asks for NAME: sqlacodegen's generators take ~2.5 s of CPU to import,
#: which most servers (one per test process) never need.
ON_DEMAND = {"sqlacodegen": ("sqlacodegen.cli", "sqlacodegen.generators")}

#: What the server imports before the first fork of the command with a subcommand: the
#: REST server's modules (Starlette, anyio: ~0.35 s of CPU) for ``serve``, which
#: tests/server starts once per module and more.
SUBCOMMAND_PRELOAD = {"serve": ("trinitylake_dbapi.server",)}

#: The first argument that makes this file a server (any other is the command's: `serve` is one).
SERVER_FLAG = "--warm-cli-server"

#: ``SCRIPT_FLAG PATH ARGS...`` runs the Python script PATH as ``python PATH ARGS...`` would
#: (its ``__main__``), in place of the command (the docs test's page worker).
SCRIPT_FLAG = "--warm-cli-script"

#: ``MODULE_FLAG NAME ARGS...``: ``python -m NAME ARGS...`` (e.g. sqlacodegen).
MODULE_FLAG = "--warm-cli-module"

#: The environment variable that gives a client its server's address.
ADDRESS_VARIABLE = "TL_WARM_CLI"



# ---------------------------------------------------------------------------
# The test process's side
# ---------------------------------------------------------------------------

_server: Any = None
_starting = threading.Lock()


def address() -> str:
    """The address of this process's server (started on first use), for
    :data:`ADDRESS_VARIABLE`: ``@name`` is a Linux abstract socket, else a path."""
    with _starting:
        return _address()


def _address() -> str:
    global _server
    if _server is None:
        import atexit
        import subprocess
        import tempfile
        import uuid

        if sys.platform.startswith("linux"):
            where, cleanup = f"@tl-warm-cli-{os.getpid()}-{uuid.uuid4().hex}", None
        else:
            cleanup = tempfile.mkdtemp(prefix="tl-warm-cli-")
            where = os.path.join(cleanup, "socket")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), SERVER_FLAG, where],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)  # fmt: skip
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready != b"ready\n":
            raise RuntimeError(f"the warm trinitylake server did not start: {ready!r}")

        def stop() -> None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(60)  # then killed: not a deadline
            except subprocess.TimeoutExpired:
                proc.kill()
            if cleanup:
                import shutil

                shutil.rmtree(cleanup, ignore_errors=True)

        atexit.register(stop)
        _server = (proc, where)
    return _server[1]


def server_pid() -> int:
    """This process's server (started if need be)."""
    address()
    return _server[0].pid


def command() -> list[str]:
    """The argv prefix that runs ``trinitylake`` warm (the environment must hold
    :func:`env`'s variable)."""
    return [sys.executable, "-S", "-I", os.path.abspath(__file__)]


def script(path: str, *args: str) -> list[str]:
    """The argv that runs ``python PATH ARGS...`` warm (the environment must hold
    :func:`env`'s variable): a Python script that the preloaded modules spare imports."""
    return [*command(), SCRIPT_FLAG, str(path), *args]


def module(name: str, *args: str) -> list[str]:
    """The argv that runs ``python -m NAME ARGS...`` warm (as :func:`script`)."""
    return [*command(), MODULE_FLAG, name, *args]


def env(base: dict[str, str] | None = None, bash_function: bool = True) -> dict[str, str]:
    """``base`` (default: this process's environment) plus the server's address, and
    (``bash_function``) bash functions ``trinitylake``, ``sqlacodegen`` and ``alembic``
    (exported: bash scripts it starts have them too) that run those commands warm in place
    of the console scripts on PATH."""
    result = dict(os.environ if base is None else base)
    result[ADDRESS_VARIABLE] = address()
    if not bash_function:
        return result
    quoted = " ".join("'" + part.replace("'", "'\\''") + "'" for part in command())
    result["BASH_FUNC_trinitylake%%"] = "() {  " + quoted + ' "$@"\n}'
    # sqlacodegen's and alembic's console scripts are their `python -m` (each __main__
    # calls the same main).
    for name in ("sqlacodegen", "alembic"):
        result[f"BASH_FUNC_{name}%%"] = "() {  " + quoted + f" {MODULE_FLAG} {name}" + ' "$@"\n}'
    return result


def run(*args: str, stdin: str | None = None, cwd: Any = None,
        environment: dict[str, str] | None = None, timeout: float | None = None) -> Any:
    """``trinitylake ARGS`` warm, as ``subprocess.run(..., capture_output=True,
    text=True)`` returns it (timeout: tests/deadlines.py's HANG_S by default)."""
    import subprocess

    from deadlines import HANG_S

    return subprocess.run([*command(), *args], input=stdin, capture_output=True, text=True,
                          env=env(environment), cwd=cwd, timeout=HANG_S if timeout is None else timeout)  # fmt: skip


# ---------------------------------------------------------------------------
# The messages
# ---------------------------------------------------------------------------


def _socket_address(where: str) -> str:
    return "\0" + where[1:] if where.startswith("@") else where


def _send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """One JSON line (with ``fds``, sent along with its first bytes)."""
    data = json.dumps(message).encode() + b"\n"
    sent = socket.send_fds(sock, [data], fds) if fds else 0
    sock.sendall(data[sent:])


def _receive_request(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """The client's one JSON line and the descriptors sent with it (None: it went away)."""
    data, fds, _, _ = socket.recv_fds(sock, 65536, 3)
    while not data.endswith(b"\n"):
        more = sock.recv(65536)
        if not more:
            return None, fds
        data += more
    return json.loads(data), fds


# ---------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------


def client(args: list[str]) -> None:
    """Run ``trinitylake ARGS`` through the server; exit as the command did."""
    environment = dict(os.environ)
    where = environment.pop(ADDRESS_VARIABLE)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(_socket_address(where))
    if args[:1] == [SCRIPT_FLAG]:
        request = {"script": os.path.abspath(args[1]), "argv": [args[1], *args[2:]]}
    elif args[:1] == [MODULE_FLAG]:
        request = {"module": args[1], "argv": ["-m", *args[2:]]}
    else:
        request = {"argv": ["trinitylake", *args]}
    _send(sock, {**request, "cwd": os.getcwd(), "env": environment}, [0, 1, 2])
    replies = sock.makefile("rb")
    started = replies.readline()
    assert started, "the warm trinitylake server closed the connection"
    pid = json.loads(started)["pid"]

    def forward(signum: int, frame: Any) -> None:
        os.kill(pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    ended = replies.readline()
    assert ended, "the warm trinitylake keeper died"
    status = json.loads(ended)["status"]
    if status < 0:  # killed by a signal: so is the client
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        os._exit(128 - status)
    os._exit(status)


# ---------------------------------------------------------------------------
# The server, its keepers, the command
# ---------------------------------------------------------------------------


def serve(where: str) -> tuple[dict, list[int]]:
    """Import, listen, fork a keeper per client; returns (in the command's process only)
    the request the command runs."""
    for name in PRELOAD:
        _preload(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_socket_address(where))
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    keepers = set()
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [], 1.0)
        # Keepers are waited for (not left to the kernel with SIGCHLD ignored), so that
        # the commands' CPU time counts in this process's children, then in the test
        # process's when it waits for this one (tests/conftest.py TL_TEST_CPU_LOG, time(1)).
        for pid in list(keepers):
            if os.waitpid(pid, os.WNOHANG)[0]:
                keepers.discard(pid)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1):  # WC3: the owner is gone
            for pid in keepers:
                os.waitpid(pid, 0)
            raise SystemExit(0)
        if listener not in readable:
            continue
        conn, _ = listener.accept()
        request, fds = _receive_request(conn)
        if request is None or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        if "script" in request or "module" in request:
            for name in SCRIPT_PRELOAD:
                _preload(name)
        for name in ON_DEMAND.get(request.get("module", ""), ()):
            _preload(name)
        if "script" not in request and "module" not in request:  # the command: ["trinitylake", *args]
            for name in SUBCOMMAND_PRELOAD.get(next(iter(request["argv"][1:2]), ""), ()):
                _preload(name)
        pid = os.fork()
        if pid == 0:
            listener.close()
            return keep(conn, request, fds)
        keepers.add(pid)
        for fd in fds:
            os.close(fd)
        conn.close()


def _preload(name: str) -> None:
    """Import ``name`` in the server (before a fork), unless it is not installed here (the
    command imports it itself then, if at all)."""
    import importlib

    try:
        importlib.import_module(name)
    except ImportError:
        pass
    if threading.active_count() != 1:  # WC2
        raise RuntimeError(f"importing {name} started a thread; forking would copy a lock held by it")


def keep(conn: socket.socket, request: dict, fds: list[int]) -> tuple[dict, list[int]]:
    """The keeper: fork the command, report its pid and then its exit status; returns
    (in the command's process only) the request."""
    pid = os.fork()
    if pid == 0:
        conn.close()
        return request, fds
    for fd in fds:
        os.close(fd)
    _send(conn, {"pid": pid})
    try:
        watch = os.pidfd_open(pid)
    except (AttributeError, OSError):
        watch = None
    while True:
        readable, _, _ = select.select([conn] + ([watch] if watch is not None else []), [], [],
                                       None if watch is not None else 0.05)  # fmt: skip
        if conn in readable:  # WC3: the client went away (nothing else is ever sent)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os._exit(0)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    _send(conn, {"status": os.waitstatus_to_exitcode(status)})
    os._exit(0)


def _stdio(fd: int, encoding: str, errors: str, unbuffered: bool) -> Any:
    """A standard stream over ``fd`` made as CPython makes it at start (create_stdio)."""
    import io

    write = fd != 0
    buffer = io.open(fd, "wb" if write else "rb", buffering=0 if write and unbuffered else -1, closefd=False)
    raw = buffer if write and unbuffered else buffer.raw
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    line_buffering = not unbuffered and (raw.isatty() or fd == 2)
    stream = io.TextIOWrapper(buffer, encoding, errors, newline="\n",
                              line_buffering=line_buffering, write_through=unbuffered)  # fmt: skip
    stream.mode = "w" if write else "r"
    return stream


def command_main(request: dict, fds: list[int]) -> None:
    """The command: take the client's descriptors, directory, environment and argv, then
    run the console script's entry point (raises SystemExit)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    encoding, _, errors = os.environ.get("PYTHONIOENCODING", "").partition(":")
    streams = []
    for fd, old in enumerate((sys.__stdin__, sys.__stdout__, sys.__stderr__)):
        default_errors = "backslashreplace" if fd == 2 else (old.errors if old else "strict")
        streams.append(_stdio(fd, encoding or (old.encoding if old else "utf-8"),
                              errors or default_errors, unbuffered))  # fmt: skip
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
    sys.argv = request["argv"]
    if "script" in request:  # as `python SCRIPT ARGS...`: its directory first on the path
        import runpy

        sys.path[0] = os.path.dirname(request["script"])
        runpy.run_path(request["script"], run_name="__main__")
        return
    if "module" in request:  # as `python -m MODULE ARGS...`: the directory first on the path
        import runpy

        sys.path[0] = os.getcwd()
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        return
    sys.path[0] = os.path.dirname(sys.executable)  # as the console script in the venv's bin
    from trinitylake_dbapi.cli import run as trinitylake

    trinitylake()


if __name__ == "__main__":
    if sys.argv[1:2] == [SERVER_FLAG]:
        command_main(*serve(sys.argv[2]))
    else:
        client(sys.argv[1:])
