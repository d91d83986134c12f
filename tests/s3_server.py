"""A local S3 for tests and the bench: moto's S3 server on 127.0.0.1, safe for races.

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

Counting on the wire: the server records every request it answers (``server.wire``, a
:class:`WireLog`), whichever client sent it (s3fs for the lakehouse's own files, PyArrow's
S3 file system for Iceberg data and metadata files)::

    with server.wire.recording() as sent:
        operation()
    sent.by_kind()  # {"PUT": 3, "HEAD": 1}
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import urllib.parse
import uuid
from collections import Counter
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


_shared_models: dict[tuple, Any] = {}


def share_botocore_models() -> None:
    """Parse each of botocore's data files (the S3 service model, its endpoint rules,
    partitions, retry and default settings) once per process instead of once per client
    session (idempotent, process-wide; the tests' ``s3_server`` fixture calls it, the
    bench does not).

    Why: the tests' s3fs options skip fsspec's instance cache, so every ``Storage``,
    connection and verify on S3 opens a new s3fs filesystem, whose new aiobotocore
    session has a new botocore ``Loader`` that parses the same JSON files again
    (about 0.2 s of CPU each, endpoints.json the largest; 16 times in one test of
    tests/iceberg/test_locations.py). botocore's own ``instance_cache`` already shares these
    dicts among all the clients of one session; this shares them among sessions
    with the same loader class, search paths and extras (moto's loader, with its
    "moto" extras, keeps its own). Service model files are not shared below
    ``load_service_model``: extras are merged into them in place."""
    from botocore import loaders

    if getattr(loaders.Loader, "_tl_shared_models", False):
        return
    load_service_model = loaders.Loader.load_service_model
    load_data_with_path = loaders.Loader.load_data_with_path

    def key(loader: Any, *args: Any) -> tuple:
        return (type(loader), tuple(loader.search_paths), tuple(loader.extras_types), *args)

    @functools.wraps(load_service_model)
    def shared_service_model(self: Any, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        k = key(self, "model", service_name, type_name, api_version)
        if k not in _shared_models:
            _shared_models[k] = load_service_model(self, service_name, type_name, api_version)
        return _shared_models[k]

    @functools.wraps(load_data_with_path)
    def shared_data_with_path(self: Any, name: str) -> Any:
        if "/" in name:  # a service's file (service/version/type): see above
            return load_data_with_path(self, name)
        k = key(self, "data", name)  # endpoints (the largest), partitions, _retry, ...
        if k not in _shared_models:
            _shared_models[k] = load_data_with_path(self, name)
        return _shared_models[k]

    loaders.Loader.load_service_model = shared_service_model
    loaders.Loader.load_data_with_path = shared_data_with_path
    _share_ssl_contexts()
    loaders.Loader._tl_shared_models = True


def _share_ssl_contexts() -> None:
    """One TLS context per verify setting for every aiobotocore HTTP session of the
    process, instead of a new one per session, which loads certifi's CA bundle again
    (``load_verify_locations``, about 0.03 s of CPU, a third as much as the JSON above
    per new s3fs filesystem) although moto is plain HTTP. Only the plain case is
    shared: no proxy, no client certificate (either changes the context). Skipped if
    aiobotocore no longer has the method."""
    try:
        from aiobotocore.httpsession import AIOHTTPSession
    except ImportError:
        return
    build = getattr(AIOHTTPSession, "_build_ssl_contexts", None)
    if build is None:
        return
    contexts: dict[Any, Any] = {}

    @functools.wraps(build)
    def shared(self: Any, proxy_url: Any) -> Any:
        if proxy_url or getattr(self, "_cert_file", None) or not isinstance(self._verify, (bool, str)):
            return build(self, proxy_url)
        if self._verify not in contexts:
            contexts[self._verify] = build(self, proxy_url)
        return contexts[self._verify]

    AIOHTTPSession._build_ssl_contexts = shared


#: Request kinds of :meth:`WireRequest.kind`, in report order.
WIRE_KINDS = ("HEAD", "GET", "PUT", "DELETE", "LIST", "POST")


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request the server answered: method, bucket, key and query string."""

    method: str
    bucket: str
    key: str
    query: str

    @property
    def kind(self) -> str:
        """What the request does on S3: HEAD, GET and PUT of an object (a conditional
        PUT too), DELETE (one object, or DeleteObjects: ``POST ?delete``), LIST (a GET of
        the bucket), POST (a multipart upload's start or completion)."""
        if self.method == "GET" and not self.key:
            return "LIST"
        if self.method == "POST" and "delete" in urllib.parse.parse_qs(self.query, keep_blank_values=True):
            return "DELETE"
        return self.method


@dataclass
class WireRecording:
    """The requests of one :meth:`WireLog.recording` block, in the order they came."""

    requests: list[WireRequest] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.requests)

    def by_kind(self) -> dict[str, int]:
        """Requests per kind (:data:`WIRE_KINDS`), kinds that occur only."""
        counts = Counter(r.kind for r in self.requests)
        return {kind: counts[kind] for kind in WIRE_KINDS if counts[kind]}

    def keys(self, kind: str) -> list[str]:
        """The keys of the requests of ``kind``, in order."""
        return [r.key for r in self.requests if r.kind == kind]


class WireLog:
    """The requests one server answers, recorded only inside :meth:`recording`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[WireRecording] = []

    @contextlib.contextmanager
    def recording(self) -> Iterator[WireRecording]:
        """Record every request answered until the block ends (requests complete before
        the client call that sent them returns, so the block sees exactly its own)."""
        sent = WireRecording()
        with self._lock:
            self._open.append(sent)
        try:
            yield sent
        finally:
            with self._lock:
                self._open.remove(sent)

    def record(self, request: WireRequest) -> None:
        """Add ``request`` to every open recording."""
        with self._lock:
            for sent in self._open:
                sent.requests.append(request)

    def middleware(self, app: Any) -> Any:
        """A WSGI application that records each request (path style: ``/bucket/key``)
        and then hands it to ``app``."""

        def recorded(environ: dict[str, Any], start_response: Any) -> Any:
            path = urllib.parse.unquote(environ.get("PATH_INFO", ""))
            bucket, _, key = path.lstrip("/").partition("/")
            self.record(WireRequest(environ["REQUEST_METHOD"], bucket, key, environ.get("QUERY_STRING", "")))
            return app(environ, start_response)

        return recorded


@dataclass
class S3Server:
    """A running moto S3 server; ``storage_options`` configure s3fs for it."""

    endpoint_url: str
    storage_options: dict[str, Any] = field(default_factory=dict)
    #: Every request this server answers, recorded inside ``wire.recording()``.
    wire: WireLog = field(default_factory=WireLog)

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
    """Start moto on 127.0.0.1 on a free port, create ``buckets``, stop on exit.

    moto's own server (``ThreadedMotoServer``) made of its public pieces, with the
    wire log's middleware in front of the application."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    _serialize_s3_puts()
    # werkzeug logs every request to stderr; keep test output readable.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    wire = WireLog()

    class Dispatcher(DomainDispatcherApplication):
        """moto's dispatcher with its host -> backend lookup memoized (a function of the
        host alone): as shipped, every request lists moto's package directory (~200
        stats) and tries each service's URL patterns, under the dispatcher's lock, a
        large share of the server's time per request."""

        backends: dict[str | None, Any] = {}

        def get_backend_for_host(self, host: str | None) -> Any:
            if host not in self.backends:
                self.backends[host] = super().get_backend_for_host(host)
            return self.backends[host]

    app = wire.middleware(Dispatcher(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="moto-s3", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        endpoint = f"http://{host}:{port}"
        s3 = S3Server(endpoint_url=endpoint, storage_options=storage_options_for(endpoint), wire=wire)
        for bucket in buckets:
            s3.create_bucket(bucket)
        yield s3
    finally:
        server.shutdown()
        thread.join()
