"""Manifest lists and manifests decoded with reader trees built once (iceberg.manifests
MF1): the Avro header's reader too, and the files decode as PyIceberg decodes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import trinitylake_dbapi
from trinitylake_dbapi.iceberg import manifests


def test_the_header_reader_is_built_once_and_files_decode_as_pyiceberg_decodes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with trinitylake_dbapi.connect(str(tmp_path / "lake"), create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.t (id BIGINT, name STRING) TBLPROPERTIES ('compaction.auto.min-small-files' = '0')")
        for i in range(4):
            cur.execute("INSERT INTO ns.t VALUES (?, ?)", (i, f"n{i}"))
        table = conn.iceberg_catalog().load_table("ns.t")
        built: list[Any] = []
        real = manifests.construct_reader

        def counting(*args: Any, **kwargs: Any) -> Any:
            built.append(args[0])
            return real(*args, **kwargs)

        monkeypatch.setattr(manifests, "construct_reader", counting)
        monkeypatch.setattr(manifests.ManifestAvroFile, "_header_reader", None)
        for snapshot in table.metadata.snapshots:
            ours = manifests.read_list(table.io, snapshot.manifest_list).manifests
            assert ours == snapshot.manifests(table.io)
            for manifest in ours:
                entries = manifests.manifest_entries(table.io, manifest, discard_deleted=False)
                assert entries == manifest.fetch_manifest_entry(table.io, discard_deleted=False)
        assert len(table.metadata.snapshots) == 4
        assert built == [manifests.META_SCHEMA]  # one header reader for every file read
