"""The one deadline the tests use: it catches a hang, never a slow machine.

DL1. No test compares elapsed time with a limit. A wait that could block forever (a
     subprocess, a pexpect prompt, a queue, a barrier, a file another process writes)
     has a deadline of ``HANG_S``, and only so that a hang ends the test instead of the
     run.
DL2. ``HANG_S`` is longer than a whole ``scripts/test`` run (about 10 minutes on the
     2-core host). The runs beside the main one go at nice 19, and so do their child
     processes: while the main run keeps both cores busy, such a child gets about 1.5%
     of a core (CFS weights 15 against 1024), so a 3-second interpreter start can take
     minutes. It is never starved past the end of the main run, after which it has the
     cores; a deadline longer than the whole run cannot fire for slowness.
DL3. Hypothesis' per-example deadline (200 ms by default) and its too_slow health check
     are wall-clock limits too: tests/conftest.py loads a profile without them.
"""

from __future__ import annotations

import subprocess

#: seconds (DL2): 30 minutes.
HANG_S = 1800


def stop(process: subprocess.Popen) -> None:
    """End a server the tests started: SIGTERM, 30 s to exit (then SIGKILL: a wait
    followed by a kill, not a deadline), and reap it."""
    process.terminate()
    try:
        process.wait(timeout=30)  # then killed: not a deadline
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
