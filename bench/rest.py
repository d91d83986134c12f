"""``python -m bench.rest [--reps N]``: the Iceberg REST catalog (``trinitylake serve``)
against the catalogs used in process, and the cost of the HTTP layer itself.

Prints a Markdown table of medians (milliseconds), the sides interleaved in each
repetition (the host's speed drifts: NOTES.md):

- ``load_table`` and a one-row ``append`` through PyIceberg's RestCatalog to a server in
  another process, through TrinityLakeCatalog in process (same lakehouse), and through
  PyIceberg's SqlCatalog (SQLite) in process;
- the HTTP layer: ``GET /v1/config`` (no catalog work) over one keep-alive connection,
  alone and while 100 other connections sit stalled in the middle of a request body
  (what a slow client costs the others), and 8 clients at once (requests per second).

Also the "rest" section of ``python -m bench`` (:func:`rest`, :func:`render`; its smoke
run is part of tests/bench/test_bench_smoke.py). Standalone, run it on a quiet host.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _start_server(lake: str, log_path: str) -> tuple[subprocess.Popen, str]:
    """``trinitylake serve`` in a process of its own, its output into ``log_path`` (a pipe
    nobody reads would fill and stop it); returns once it listens."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "dialect"), os.environ.get("PYTHONPATH", "")]))
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "trinitylake_dbapi.cli", "serve", lake, "--port", "0", "--insecure-no-auth"],
            env=env, stdout=subprocess.DEVNULL, stderr=log, text=True,
        )
    while True:
        with open(log_path) as f:
            line = f.readline()
        if line.endswith("\n") and " at " in line:
            return process, line.rsplit(" at ", 1)[1].strip()
        if process.poll() is not None:
            raise RuntimeError(f"the server did not start: {open(log_path).read()}")
        time.sleep(0.1)


def _ms(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1000


def rest(workdir: str, reps: int, log: Callable[[str], None] = lambda _: None) -> dict:
    """The figures of the module docstring, ``reps`` interleaved repetitions, in a fresh
    directory under ``workdir``; medians in milliseconds, and the requests per second."""
    import pyarrow as pa
    import requests
    from pyiceberg.catalog import load_catalog
    from pyiceberg.catalog.sql import SqlCatalog

    from trinitylake_dbapi.iceberg import TrinityLakeCatalog

    os.makedirs(workdir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="rest-", dir=workdir)
    lake = os.path.join(workdir, "lake")
    process = None
    try:
        local = TrinityLakeCatalog("local", uri=lake, create="true")
        process, url = _start_server(lake, os.path.join(workdir, "server.log"))
        rest_catalog = load_catalog("rest", type="rest", uri=url)
        os.makedirs(os.path.join(workdir, "sql-warehouse"))
        sql = SqlCatalog("sql", uri=f"sqlite:///{workdir}/sql.db", warehouse=f"file://{workdir}/sql-warehouse")
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        row = pa.table({"id": pa.array([1], pa.int64()), "name": ["x"]})
        sides = {"REST (RestCatalog -> trinitylake serve)": (rest_catalog, "viarest"),
                 "TrinityLakeCatalog in process": (local, "inproc"),
                 "SqlCatalog (SQLite) in process": (sql, "sqlcat")}
        for cat, ns in sides.values():
            cat.create_namespace(ns)
            cat.create_table(f"{ns}.t", schema=schema).append(row)
        loads: dict[str, list[float]] = {name: [] for name in sides}
        appends: dict[str, list[float]] = {name: [] for name in sides}
        for rep in range(reps):
            for name, (cat, ns) in sides.items():
                loads[name].append(_ms(lambda: cat.load_table(f"{ns}.t")))
                table = cat.load_table(f"{ns}.t")
                appends[name].append(_ms(lambda: table.append(row)))
            if (rep + 1) % 10 == 0 or rep + 1 == reps:
                log(f"rest: rep {rep + 1}/{reps}")

        session = requests.Session()
        config = url + "/v1/config"
        alone = [_ms(lambda: session.get(config).raise_for_status()) for _ in range(reps * 5)]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        stalled = []
        for _ in range(100):
            s = socket.create_connection((host, int(port)))
            s.sendall(b"POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            stalled.append(s)
        beside = [_ms(lambda: session.get(config).raise_for_status()) for _ in range(reps * 5)]
        for s in stalled:
            s.close()

        def client(_: int) -> int:
            own = requests.Session()
            for _ in range(reps * 5):
                own.get(config).raise_for_status()
            return reps * 5

        start = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            total = sum(pool.map(client, range(8)))
        rate = total / (time.perf_counter() - start)
        return {
            "reps": reps,
            "sides": {name: {"load_table_ms": statistics.median(loads[name]),
                             "append_ms": statistics.median(appends[name])} for name in sides},
            "http": {"config_ms": statistics.median(alone), "config_beside_stalled_ms": statistics.median(beside),
                     "config_8_clients_per_s": rate},
        }
    finally:
        if process is not None:
            process.terminate()
            process.wait()
            with open(os.path.join(workdir, "server.log")) as f:
                tail = f.read()[-2000:]
            if tail.count("\n") > 1:
                log(f"rest: the server's log ended with:\n{tail}")
        shutil.rmtree(workdir, ignore_errors=True)


def render(c: dict) -> str:
    """Markdown of :func:`rest`'s result."""
    names = list(c["sides"])
    lines = [f"| operation (median ms) | " + " | ".join(names) + " |", "|---|" + "---|" * len(names),
             "| load_table | " + " | ".join(f"{c['sides'][n]['load_table_ms']:.1f}" for n in names) + " |",
             "| one-row append | " + " | ".join(f"{c['sides'][n]['append_ms']:.1f}" for n in names) + " |",
             "", "| HTTP layer | value |", "|---|---|",
             f"| GET /v1/config, one connection (median ms) | {c['http']['config_ms']:.2f} |",
             f"| the same beside 100 stalled connections (median ms) | {c['http']['config_beside_stalled_ms']:.2f} |",
             f"| GET /v1/config, 8 clients at once (requests/s) | {c['http']['config_8_clients_per_s']:.0f} |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rest", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=30, help="repetitions of each measurement (default 30)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-rest-") as workdir:
        result = rest(workdir, args.reps, lambda message: print(message, file=sys.stderr))
    print(f"{args.reps} interleaved repetitions")
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
