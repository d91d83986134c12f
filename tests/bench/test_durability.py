"""bench/durability.py counts the sync calls of a real process between its markers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import durability  # noqa: E402
from deadlines import HANG_S  # noqa: E402

SCRIPT = """
import os, sys, threading
sys.path.insert(0, {root!r})
from bench.lakeworker import mark
fd = os.open({path!r}, os.O_WRONLY | os.O_CREAT)
os.fsync(fd)                      # before the first marker: not reported
mark("two")
os.fsync(fd); os.fdatasync(fd)
mark("threaded")
t = threading.Thread(target=os.fsync, args=(fd,)); t.start(); t.join()
os.close(os.open({path!r}, os.O_WRONLY | os.O_DSYNC))
mark("none")
"""


@pytest.mark.skipif(durability.strace_unavailable() is not None, reason="strace cannot trace here")
def test_windows_count_syncs_of_every_thread_and_sync_opens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "trace"
    script = SCRIPT.format(root=ROOT, path=str(tmp_path / "f"))
    subprocess.run(["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=fsync,fdatasync,sync_file_range,syncfs,openat",
                    sys.executable, "-c", script], check=True, timeout=HANG_S)  # fmt: skip
    windows = durability.count_windows(trace.read_text())
    assert windows == {"two": {"syncs": 2, "sync_opens": 0}, "threaded": {"syncs": 1, "sync_opens": 1},
                       "none": {"syncs": 0, "sync_opens": 0}}  # fmt: skip
