"""A local S3 for tests: moto's ThreadedMotoServer on 127.0.0.1, safe for races.

moto (5.2.x) honours ``If-None-Match: *`` but checks and stores in two steps, so two
racing conditional PUTs can both succeed (NOTES: 1 in 200-500 races). Real S3 is atomic
there. To test *our* code rather than moto's race, the S3 put handlers (PUT object and
the POST that completes a multipart upload) run under one process-wide lock. Reads,
lists and deletes are not locked.

Usage::

    with running_s3_server() as server:
        server.create_bucket("lake")
        Storage("s3://lake/x/", server.storage_options)

``server.storage_options`` is a plain, picklable dict for s3fs, so it can be passed to
worker processes.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_PUT_LOCK = threading.Lock()
_patched = False
_patch_lock = threading.Lock()

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


def _serialize_s3_puts() -> None:
    """Wrap moto's S3 put handlers in one lock (idempotent, process-wide)."""
    global _patched
    with _patch_lock:
        if _patched:
            return
        from moto.s3.responses import S3Response

        for name in ("put_object", "_key_response_post"):
            original = getattr(S3Response, name)

            @functools.wraps(original)
            def locked(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
                with _PUT_LOCK:
                    return __original(self, *args, **kwargs)

            setattr(S3Response, name, locked)
        _patched = True


@dataclass
class S3Server:
    """A running moto S3 server; ``storage_options`` configure s3fs for it."""

    endpoint_url: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def boto3_client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def create_bucket(self, name: str | None = None) -> str:
        """Create a bucket with boto3 (``fs.mkdir`` fails on region); returns its name."""
        name = name or f"test-{uuid.uuid4().hex[:20]}"
        self.boto3_client().create_bucket(Bucket=name)
        return name


def storage_options_for(endpoint_url: str) -> dict[str, Any]:
    """s3fs options for a moto endpoint: fixed test credentials, no instance cache."""
    return {
        "key": ACCESS_KEY,
        "secret": SECRET_KEY,
        "client_kwargs": {"endpoint_url": endpoint_url, "region_name": REGION},
        "skip_instance_cache": True,
    }


@contextlib.contextmanager
def running_s3_server(buckets: tuple[str, ...] = ()) -> Iterator[S3Server]:
    """Start moto on 127.0.0.1 on a free port, create ``buckets``, stop on exit."""
    from moto.server import ThreadedMotoServer

    _serialize_s3_puts()
    # werkzeug logs every request to stderr; keep test output readable.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        s3 = S3Server(endpoint_url=endpoint, storage_options=storage_options_for(endpoint))
        for bucket in buckets:
            s3.create_bucket(bucket)
        yield s3
    finally:
        server.stop()
