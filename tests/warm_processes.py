"""Worker processes that start warm: multiprocessing's "forkserver" with the engine, s3fs,
PyIceberg and pytest imported once, in the server (``PRELOAD``).

Why: "spawn" starts a fresh interpreter per worker, which imports all of that again
(1-1.5 s of CPU per process here); in the tests that start 4-9 workers that was most of
their run time on a 2-core host. The workers are as real as before: separate processes,
forked from the server, each opening its own sessions and files.

Invariants: the server is a fresh interpreter that only imports (no moto or fsspec
thread, no open session to inherit across fork); it reads the preload list once, when
the first worker of the test process starts, so a module named later is imported by the
workers themselves, as with spawn (slower, the same behaviour). A preload module that
cannot be imported is skipped by multiprocessing.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from multiprocessing.context import BaseContext

#: What the workers of the tests import (the test modules themselves pull in pytest).
PRELOAD = ["pytest", "pyarrow", "trinitylake_dbapi.catalog", "trinitylake_dbapi.iceberg.catalog",
           "pyiceberg.io.pyarrow", "reliability_workers"]

#: What the workers of the S3 tests import besides (s3fs, and botocore's data files parsed
#: once: s3_warm): ~0.9 s of CPU in each server, preloaded unless :data:`preload_s3` is off.
S3_PRELOAD = ["s3fs", "s3_warm"]

#: Whether servers preload S3_PRELOAD. tests/conftest.py turns it off in a session that
#: runs no test marked ``s3`` (``--quick``, ``-m "not s3"``), whose workers never open an
#: s3fs filesystem; were one to, it would import s3fs itself, as with spawn.
preload_s3 = True


def context(*modules: str) -> BaseContext:
    """The forkserver context; ``modules`` (e.g. the calling test module, whose worker
    functions the children look up by name) are preloaded too if the server has not
    started yet."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*PRELOAD, *(S3_PRELOAD if preload_s3 else ()), *modules])
    _start_server_with_our_path()
    return ctx


def _start_server_with_our_path() -> None:
    """Start the forkserver (if it is not running) with this process's ``sys.path`` in
    its ``PYTHONPATH``. Python 3.11's forkserver imports the preload modules with the
    path of a fresh interpreter (it ignores the parent's ``sys.path``, which
    multiprocessing hands only to the children), so the tests' own modules
    (reliability_workers, s3_warm, the test modules: on the path through
    tests/conftest.py and pytest's rootdir) were skipped as unimportable and every
    child imported them again after its fork."""
    from multiprocessing import forkserver

    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
