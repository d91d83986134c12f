"""A warm process that forks writer processes on demand, so that a SIGKILL lands inside
a commit rather than inside ``import pyarrow``.

multiprocessing's "spawn" starts a fresh interpreter per process (about 0.6 s of
imports here), and Python 3.11's "forkserver" re-imports the parent's ``__main__``
(pytest) in every child. The zygote imports the engine once, without starting any
thread, and ``os.fork()``s a child per request.

Protocol (JSON lines on the zygote's stdin/stdout):
  {"run": "module:function", "args": [...], "kwargs": {...}}  ->  {"pid": 1234}
  {"wait": 1234}                                              ->  {"exitcode": -9}
A child that returns exits with 0, one that raises prints the traceback and exits
with 1; a killed child reports minus the signal number, like multiprocessing.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import traceback
from typing import Any

from deadlines import HANG_S


class Zygote:
    """The parent's handle on a zygote process (a context manager)."""

    def __init__(self, preload: tuple[str, ...] = ("reliability_workers",)) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
        )
        assert self._ask({"ping": True}) == {"pong": True}

    def _ask(self, request: dict) -> dict:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the zygote process died")
        return json.loads(line)

    def start(self, target: str, *args: Any, **kwargs: Any) -> int:
        """Fork a child running ``target`` ("module:function"); returns its pid."""
        return self._ask({"run": target, "args": list(args), "kwargs": kwargs})["pid"]

    def wait(self, pid: int) -> int:
        """Wait for a child; its exit code (negative signal number if killed)."""
        return self._ask({"wait": pid})["exitcode"]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(HANG_S)

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _warm_up() -> None:
    """Run the engine once on a memory:// lakehouse, so that children start warm (lazy
    imports and first-use initialisation cost about 0.3 s)."""
    from reliability_workers import writer

    from trinitylake_dbapi.catalog import LakehouseCatalog
    from trinitylake_dbapi.verify import verify

    location = "memory://zygote-warm-up/lake"
    LakehouseCatalog(location, create=True, lakehouse_options={"order": 4})
    writer(location, None, 0, 20, 1)
    verify(location, all_versions=True)
    import threading

    # pyarrow's native threads (started at import) are fork-safe: Arrow re-creates its
    # pools after fork. A Python thread would not be.
    if threading.active_count() != 1:
        raise RuntimeError("the zygote started a Python thread while warming up")


def _serve(preload: list[str]) -> None:
    for name in preload:
        importlib.import_module(name)
    if "reliability_workers" in preload:
        _warm_up()
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if "ping" in request:
            reply: dict = {"pong": True}
        elif "run" in request:
            module, _, function = request["run"].partition(":")
            target = getattr(importlib.import_module(module), function)
            pid = os.fork()
            if pid == 0:  # the child: run, never return into the loop
                code = 0
                try:
                    sys.stdin.close()
                    target(*request["args"], **request["kwargs"])
                except BaseException:  # noqa: BLE001 - reported through the exit code
                    traceback.print_exc()
                    code = 1
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            reply = {"pid": pid}
        else:
            _, status = os.waitpid(request["wait"], 0)
            reply = {"exitcode": os.waitstatus_to_exitcode(status)}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    _serve(sys.argv[1:])
