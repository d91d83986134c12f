"""Imported by the tests' forkserver (tests/warm_processes.py, ``PRELOAD``): botocore's
S3 data files parsed once in the server, before any fork, and shared by every worker it
forks (tests/s3_server.py, ``share_botocore_models``).

Why: each worker that opens an s3fs filesystem otherwise parses S3's service model, its
endpoint rules and endpoints.json itself (about 0.3 s of CPU per process; 8 writers per
round set of tests/storage/test_exclusive_race.py, 4 appenders in tests/iceberg/test_catalog.py).
Only parsing happens here: no session, client, thread or socket (warm_processes'
invariant: the server only imports).
"""

from __future__ import annotations

from botocore.loaders import create_loader

from s3_server import share_botocore_models

share_botocore_models()
_loader = create_loader()
for _type in ("service-2", "endpoint-rule-set-1", "paginators-1"):
    _loader.load_service_model("s3", _type)
for _name in ("endpoints", "partitions", "_retry", "sdk-default-configuration"):
    _loader.load_data_with_path(_name)
