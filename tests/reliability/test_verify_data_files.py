"""``trinitylake verify --data`` reports every damaged Iceberg file as a finding (issue
32, item 11): exit status 0 clean, 1 problems found, 2 could not run; never a traceback.
With ``--data`` it checks the content of what a table's metadata reaches, not only that
it exists: the size each manifest list and manifest records, Avro files whole, Parquet
magic and footer length (iceberg.reach R4, iceberg.files IF2 and IF3)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trinitylake_dbapi as tl
from deadlines import HANG_S
from trinitylake_dbapi.cli import main
from trinitylake_dbapi.iceberg import TrinityLakeCatalog
from trinitylake_dbapi.verify import verify


def build(location: str) -> str:
    with tl.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.t (id INT, s STRING)")
        cur.execute("INSERT INTO ns.t VALUES (1, 'a'), (2, 'b')")
        cur.execute("INSERT INTO ns.t VALUES (3, 'c')")
    (table,) = glob.glob(os.path.join(location, "tables", "ns", "t-*"))
    return table


def newest(pattern: str) -> str:
    return max(glob.glob(pattern), key=os.path.getmtime)


TARGETS: dict[str, Callable[[str], str]] = {
    "metadata": lambda table: sorted(glob.glob(os.path.join(table, "metadata", "*.metadata.json")))[-1],
    "manifest list": lambda table: newest(os.path.join(table, "metadata", "snap-*.avro")),
    "manifest": lambda table: newest(os.path.join(table, "metadata", "*-m*.avro")),
    "data": lambda table: newest(os.path.join(table, "data", "*.parquet")),
}


def truncate_by(n: int) -> Callable[[str], None]:
    def damage(path: str) -> None:
        with open(path, "r+b") as f:
            f.truncate(max(os.path.getsize(path) - n, 0))

    return damage


def append(path: str) -> None:
    with open(path, "ab") as f:
        f.write(b"\x00")


def overwrite_start(path: str) -> None:
    with open(path, "r+b") as f:
        f.write(b"XXXX")


def overwrite_end(path: str) -> None:
    with open(path, "r+b") as f:
        f.seek(-4, 2)
        f.write(b"XXXX")


def garbage(path: str) -> None:
    with open(path, "wb") as f:
        f.write(b"{garbage")


DAMAGE = {
    "truncated-1": truncate_by(1),
    "truncated-half": lambda path: truncate_by(os.path.getsize(path) // 2)(path),
    "empty": truncate_by(1 << 30),
    "appended": append,
    "bad-start": overwrite_start,
    "bad-end": overwrite_end,
    "garbage": garbage,
    "deleted": os.remove,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """One lakehouse for the module's damages (each test damages one file and puts its
    bytes back: a lakehouse built per test was ~40 % of each one's CPU), and the file
    of each target."""
    location = str(tmp_path_factory.mktemp("damaged") / "lake")
    table = build(location)
    return location, {target: find(table) for target, find in TARGETS.items()}


@pytest.fixture
def lake_with_one_damage(built: tuple[str, dict[str, str]], request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(the module's lakehouse, the file of the test's ``target``), whose bytes are put
    back after the test whatever it did to them."""
    location, files = built
    path = files[request.node.callspec.params["target"]]
    with open(path, "rb") as f:
        original = f.read()
    yield location, path
    with open(path, "wb") as f:
        f.write(original)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_damaged_iceberg_file_is_a_finding_that_names_it(
    lake_with_one_damage: tuple[str, str], capsys: pytest.CaptureFixture, target: str, damage: str
) -> None:
    location, path = lake_with_one_damage
    assert main(["verify", location, "--data"]) == 0  # whole again after the test before
    capsys.readouterr()
    DAMAGE[damage](path)
    assert main(["verify", location, "--data"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err and captured.err == ""
    errors = [line for line in captured.out.splitlines() if line.startswith("ERROR ")]
    assert errors and any(os.path.basename(path) in line for line in errors), captured.out
    assert captured.out.splitlines()[-1].startswith("INVALID: ")
    report = verify(location, data=True)
    assert not report.ok and any(os.path.basename(path) in p.message for p in report.errors)
    assert verify(location).ok  # without --data the catalog alone is checked, and it is intact


def test_the_command_never_prints_a_traceback(tmp_path: Any) -> None:
    """In its own process, as users run it: a garbage metadata file exits 1 with
    findings (it printed a traceback and exited 1 before)."""
    location = str(tmp_path / "lake")
    garbage(TARGETS["metadata"](build(location)))
    done = subprocess.run(
        [sys.executable, "-m", "trinitylake_dbapi.cli", "verify", location, "--data"],
        capture_output=True, text=True, timeout=HANG_S,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr and done.stderr == ""
    assert "metadata.json" in done.stdout and "not Iceberg table metadata" in done.stdout


def test_a_data_path_with_dotdot_is_a_finding_not_exit_2(tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    """A manifest may record any path (PyIceberg's add_files takes it as given): verify
    checks it, or reports it, and goes on (it exited 2 before)."""
    location = str(tmp_path / "lake")
    catalog = TrinityLakeCatalog("lake", uri=location, create="true")
    table = catalog.create_table("default.t", pa.schema([("id", pa.int64())]), location=f"file://{location}/extra")
    os.makedirs(os.path.join(location, "extra"), exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), os.path.join(location, "extra", "f.parquet"))
    table.add_files([f"file://{location}/extra/../extra/f.parquet"])
    status = main(["verify", location, "--data"])
    captured = capsys.readouterr()
    assert status in (0, 1), captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err and captured.err == ""
    if status == 1:  # e.g. a file outside the managed table's location: named
        assert any(line.startswith("ERROR ") and "f.parquet" in line for line in captured.out.splitlines())


def test_a_location_that_cannot_be_verified_exits_2_with_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["verify", "s3://bucket/x/../y", "--data"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and all(line.startswith("ERROR: ") for line in err.splitlines()), err
