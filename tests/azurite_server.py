"""A local Azure Blob Storage for tests: Azurite (npm) on 127.0.0.1.

Azurite is a Node package. ``scripts/test`` installs it into the project's git-ignored
``.azurite/`` directory (``npm install --prefix .azurite azurite@<AZURITE_VERSION>``);
run directly, the tests install it there themselves when it is missing (under a file
lock, so parallel workers install it once). Node and npm must be on PATH. Measured
before it was trusted (docs/storage.md): an upload with ``If-None-Match: *`` to an
existing blob is refused (409 BlobAlreadyExists), and 200 of 200 races of 8 such
uploads of one new blob had exactly one winner.

Usage::

    with running_azurite() as server:
        container = server.create_container()
        Storage(f"az://{container}/x/", server.storage_options)

If Azurite cannot be installed or does not start, this raises: tests that need it
fail, they are never skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deadlines import HANG_S, stop

#: The Azurite release the tests run (scripts/test installs the same).
AZURITE_VERSION = "3.35.0"
#: Where it is installed: the project's git-ignored .azurite/ directory.
INSTALL_DIR = Path(__file__).resolve().parent.parent / ".azurite"
#: Azurite's well-known development account (public, in Azurite's documentation).
ACCOUNT_NAME = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#: Seconds to wait for an install or a start; only catches one that hangs.
_TIMEOUT_S = HANG_S  # deadlines DL2: at nice 19 a start can take minutes


@dataclass
class AzuriteServer:
    """A running Azurite blob service; ``storage_options`` configure adlfs for it."""

    endpoint_url: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def create_container(self, name: str | None = None) -> str:
        """Create a container; returns its name."""
        from adlfs import AzureBlobFileSystem

        name = name or f"test-{uuid.uuid4().hex[:20]}"
        AzureBlobFileSystem(**self.storage_options).mkdir(name)
        return name


def storage_options_for(endpoint_url: str) -> dict[str, Any]:
    """adlfs options for Azurite: its development account, by connection string."""
    return {
        "connection_string": (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={endpoint_url}/{ACCOUNT_NAME};"
        )
    }


def azurite_binary() -> Path:
    """The installed ``azurite-blob``, installing it into ``INSTALL_DIR`` if missing."""
    binary = INSTALL_DIR / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("Azurite needs npm (Node.js) on PATH; scripts/test installs it into .azurite/")
    INSTALL_DIR.mkdir(exist_ok=True)
    with open(INSTALL_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(INSTALL_DIR), f"azurite@{AZURITE_VERSION}"],
                check=True, timeout=_TIMEOUT_S, stdout=subprocess.DEVNULL,
            )  # fmt: skip
    return binary


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_azurite() -> Iterator[AzuriteServer]:
    """Start Azurite's blob service on 127.0.0.1 (in memory), stop it on exit."""
    binary = azurite_binary()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
         "--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "AZURITE_ACCEPT_EULA": "true"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + _TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()  # one probe, retried until the start deadline: not a deadline
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    out = process.stdout.read().decode(errors="replace") if process.stdout else ""
                    raise RuntimeError(f"Azurite did not start on {url}: {out[-2000:]}") from None
                time.sleep(0.05)
        yield AzuriteServer(url, storage_options_for(url))
    finally:
        stop(process)
