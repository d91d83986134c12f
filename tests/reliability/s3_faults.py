"""S3 faults injected inside the moto server: the client (s3fs, botocore) sees real HTTP
errors and real timeouts, so its own retries run exactly as against AWS.

A fault is decided per request by the armed rule, from the request's method, path
(``/bucket/key``) and headers:

  * ``before``: the request is not processed; the client gets the error (a refused
    request) - or, with ``delay``, no answer before its read timeout (a lost request);
  * ``after``: the request takes effect, then the client gets the error (a lost reply) -
    or, with ``delay``, no answer before its read timeout.

Error bodies are S3's XML errors (``InternalError`` 500, ``SlowDown`` 503,
``ConditionalRequestConflict`` 409, ...), so botocore classifies them as AWS's would.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

ERRORS = {
    "InternalError": (500, "We encountered an internal error. Please try again."),
    "SlowDown": (503, "Please reduce your request rate."),
    "ConditionalRequestConflict": (409, "A conflicting conditional operation is currently "
                                        "in progress against this resource. Please try again."),
    "ServiceUnavailable": (503, "Service is unable to handle request."),
}


@dataclass(frozen=True)
class Fault:
    code: str = "InternalError"
    when: str = "before"  # or "after"
    delay: float = 0.0  # > client read timeout: a timeout instead of an error reply


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # "/bucket/key"
    headers: dict[str, str]

    @property
    def conditional(self) -> bool:
        return "if-none-match" in self.headers


Rule = Callable[[Request], "Fault | None"]


class FaultPlan:
    """The armed rule and the count of faults injected, shared with the server threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rule: Rule | None = None
        self.injected: Counter = Counter()
        self.requests = 0

    def arm(self, rule: Rule | None) -> None:
        with self._lock:
            self._rule = rule

    def decide(self, request: Request) -> Fault | None:
        with self._lock:
            if self._rule is None:
                return None
            self.requests += 1
            fault = self._rule(request)
            if fault is not None:
                self.injected[f"{fault.code} {fault.when}{' timeout' if fault.delay else ''}"] += 1
            return fault


PLAN = FaultPlan()
_patched = False


def _error(code: str) -> tuple[int, dict[str, str], bytes]:
    status, message = ERRORS[code]
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        "<RequestId>fault-injected</RequestId><HostId>moto</HostId></Error>"
    ).encode()
    return status, {"content-type": "application/xml"}, body


def _request(request: Any, full_url: str) -> Request:
    from urllib.parse import urlparse

    headers = {k.lower(): v for k, v in dict(request.headers).items()}
    return Request(request.method, urlparse(full_url).path, headers)


def _install() -> None:
    global _patched
    if _patched:
        return
    from moto.s3.responses import S3Response

    for name in ("key_response", "bucket_response"):
        original = getattr(S3Response, name)

        @functools.wraps(original)
        def faulty(self: Any, request: Any, full_url: str, headers: Any,
                   __original: Any = original) -> Any:
            fault = PLAN.decide(_request(request, full_url))
            if fault is None:
                return __original(self, request, full_url, headers)
            if fault.when == "before":
                time.sleep(fault.delay)
                return _error(fault.code)
            __original(self, request, full_url, headers)  # takes effect; the reply is lost
            time.sleep(fault.delay)
            return _error(fault.code)

        setattr(S3Response, name, faulty)
    _patched = True


@contextlib.contextmanager
def faults(rule: Rule) -> Iterator[FaultPlan]:
    """Inject faults decided by ``rule`` for the duration of the block."""
    _install()
    PLAN.injected.clear()
    PLAN.requests = 0
    PLAN.arm(rule)
    try:
        yield PLAN
    finally:
        PLAN.arm(None)


def in_bucket(bucket: str, rule: Rule) -> Rule:
    """``rule`` restricted to one bucket (other tests' buckets are left alone)."""
    prefix = f"/{bucket}/"

    def restricted(request: Request) -> Fault | None:
        if request.path.startswith(prefix) or request.path == f"/{bucket}":
            return rule(request)
        return None

    return restricted


def every_other(fault: Fault, *, only: Callable[[Request], bool] = lambda r: True,
                limit: int | None = None) -> Rule:
    """Fail every second matching request (so each retry of a failed one succeeds when
    requests are sequential), at most ``limit`` times."""
    state = {"n": 0, "failed": 0}

    def rule(request: Request) -> Fault | None:
        if not only(request):
            return None
        state["n"] += 1
        if state["n"] % 2 == 1 and (limit is None or state["failed"] < limit):
            state["failed"] += 1
            return fault
        return None

    return rule


def from_request(k: int, fault: Fault) -> Rule:
    """Every request from the k-th on fails (the network or the store goes down)."""
    state = {"n": 0}

    def rule(request: Request) -> Fault | None:
        state["n"] += 1
        return fault if state["n"] >= k else None

    return rule
