"""S3 errors injected in the moto server (timeouts, 500, 503 SlowDown, 409 conflicts):
retried where safe, reported clearly where not (issue 9, point 2).

Transient faults (each failing request succeeds when retried) must be invisible: every
commit, race, read and expiration works. Persistent faults from the k-th request of a
commit on, for every k, must leave the lakehouse at the old version or the new one, and
the caller must be told the truth: success exactly when the new version exists, and
when a lost reply makes that unknowable, an error that says so.

botocore runs its own retry logic (``standard`` mode, as configured below); only its
backoff delay is shortened so the test runs in seconds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from reliability_helpers import SMALL_TREE, columns, state
from s3_faults import Fault, every_other, faults, from_request, in_bucket
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import Error, SerializationError, StorageError
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.verify import verify

pytestmark = pytest.mark.s3

READ_TIMEOUT_S = 1.0


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.005)


def s3_storage(root: str, server: Any, *, attempts: int = 5, s3fs_retries: int = 5) -> Storage:
    import s3fs

    options = dict(server.storage_options)
    options["config_kwargs"] = {
        "retries": {"mode": "standard", "max_attempts": attempts},
        "read_timeout": READ_TIMEOUT_S,
        "connect_timeout": READ_TIMEOUT_S,
    }
    fs = s3fs.S3FileSystem(use_listings_cache=False, **options)
    fs.retries = s3fs_retries
    return Storage(root, filesystem=fs)


def test_the_conditional_put_probe_survives_a_lost_reply(s3_server: Any) -> None:
    """The one-time probe of If-None-Match support: its first PUT lands but the reply is
    lost; botocore retries and gets 412 for the probe's own object. That is support,
    not a refusal (the bug: Storage refused to work on a store that supports it)."""
    bucket = s3_server.create_bucket()
    root = f"s3://{bucket}/lake"
    storage = s3_storage(root, s3_server)
    rule = every_other(Fault("InternalError", "after"), only=lambda r: r.conditional, limit=1)
    with faults(in_bucket(bucket, rule)) as plan:
        assert storage.create_exclusive("x", b"data") is True
        assert storage.create_exclusive("x", b"other") is False
    assert sum(plan.injected.values()) == 1
    assert storage.read("x") == b"data"
    assert storage.list() == ["x"]  # the probe object is gone
