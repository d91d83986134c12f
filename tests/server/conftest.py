"""A real ``trinitylake serve`` for the REST tests: a process of its own on 127.0.0.1, a
free port.

``start_server(lake, ...)`` runs ``trinitylake serve`` and waits for the line naming its
URL; ``rest`` is one such server per module, on a fresh lakehouse, with a token file.
Tests give their objects names of their own (one namespace each). The command runs as
the tests of tests/cli run it, forked from the test process's warm server
(tests/warm_cli.py WC1: its own process, descriptors, environment, signals and exit
status; only the imports are shared): a fresh ``python -m trinitylake_dbapi.cli serve``
spent ~0.9 s of CPU before it listened, most of it importing.
"""

from __future__ import annotations

import os
import queue
import secrets
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
import requests

import warm_cli
from tests.deadlines import HANG_S

REPO = Path(__file__).resolve().parents[2]


@dataclass
class RestServer:
    """A running server: its URL, token, lakehouse location and process."""

    url: str
    token: str | None
    lake: str
    process: subprocess.Popen
    log: list[str] = field(default_factory=list)

    def catalog(self, name: str = "rest", **properties: str) -> Any:
        """PyIceberg's RestCatalog on this server."""
        from pyiceberg.catalog import load_catalog

        if self.token is not None:
            properties.setdefault("token", self.token)
        return load_catalog(name, type="rest", uri=self.url, **properties)

    def request(self, method: str, path: str, *, json: Any = None, data: Any = None,
                token: str | None | bool = True, headers: dict | None = None) -> requests.Response:
        """One HTTP request; ``token=True``: the server's token, a string: that one,
        None/False: no Authorization header."""
        sent = dict(headers or {})
        chosen = self.token if token is True else token
        if chosen:
            sent["Authorization"] = f"Bearer {chosen}"
        return requests.request(method, self.url + path, json=json, data=data, headers=sent, timeout=HANG_S)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=HANG_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def server_command(*args: str) -> list[str]:
    """``trinitylake serve ARGS``, warm (run it with :func:`server_env`)."""
    return [*warm_cli.command(), "serve", *args]


def server_env() -> dict[str, str]:
    """The environment of :func:`server_command`: the warm server's address, and the
    repository on PYTHONPATH for what the server starts."""
    paths = [str(REPO), str(REPO / "dialect"), os.environ.get("PYTHONPATH", "")]
    return warm_cli.env(dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p)), bash_function=False)


def write_token(directory: Path) -> tuple[str, str]:
    token = secrets.token_urlsafe(32)
    path = directory / "tokens"
    path.write_text(f"# tokens of the test server\n{token}\n")
    path.chmod(0o600)
    return token, str(path)


def start_server(lake: str, *args: str, token: str | None = None) -> RestServer:
    """Start ``trinitylake serve lake --port 0 *args``; return once it listens."""
    process = subprocess.Popen(server_command(lake, "--port", "0", *args), env=server_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    log: list[str] = []

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    while True:
        line = lines.get(timeout=HANG_S)
        if line is None:
            process.wait(timeout=HANG_S)
            raise AssertionError(f"the server exited ({process.returncode}): {''.join(log)}")
        if line.startswith("serving "):
            url = line.rsplit(" at ", 1)[1].strip()
            return RestServer(url, token, lake, process, log)


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """One server per module on a fresh local lakehouse, with a token file."""
    directory = tmp_path_factory.mktemp("rest")
    token, token_file = write_token(directory)
    server = start_server(str(directory / "lake"), "--create", "--token-file", token_file, token=token)
    try:
        yield server
    finally:
        server.stop()
