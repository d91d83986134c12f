"""Azure Blob Storage and ADLS Gen2 (``az://``, ``abfs://``, ``abfss://``) through adlfs.

Everything but the points below is ``FsspecBackend``'s (objectstore O1-O3); the row of
``az`` in storage/schemes.py names the filesystem class and the error mapping.

* AZ1. Exclusive create is adlfs's ``pipe_file(mode="create")``: one upload with
  ``If-None-Match: *`` (the SDK's ``overwrite=False``), which the service refuses with
  409 BlobAlreadyExists (adlfs: FileExistsError) when the blob exists; probed once per
  root (O2), as on S3. adlfs takes ``mode`` through ``**kwargs``, so the generic
  signature check of O2 cannot see it: this backend says so.
* AZ2. Requests: a read is one GET, a write one PUT (up to the SDK's single-upload size,
  64 MiB), ``exists`` and ``modified_millis`` one HEAD of the blob (adlfs's ``info``
  of a missing blob lists its prefix too), a delete one DELETE, a listing of one level one request per 5,000
  names with the "/" delimiter (adlfs's ``find`` ignores ``maxdepth``).
* AZ3. ``az://``, ``abfs://`` and ``abfss://`` (and ``container@<account host>``) name
  the same blobs, and locations are compared in one canonical form,
  ``az://container/key`` (rule U2 of storage.locations): a lakehouse created under one
  spelling is the same lakehouse, with its files inside its root, under any other.
"""

from __future__ import annotations

from typing import Any

import fsspec

from .objectstore import FsspecBackend


class AzureBackend(FsspecBackend):
    """A root on Azure Blob Storage or ADLS Gen2 (rules AZ1-AZ3)."""

    @classmethod
    def drives(cls, fs: fsspec.AbstractFileSystem) -> bool:
        """adlfs's filesystem (its ``service_client`` and ``split_path`` are used)."""
        from adlfs import AzureBlobFileSystem

        return isinstance(fs, AzureBlobFileSystem)

    def has_conditional_put(self) -> bool:
        """AZ1: ``If-None-Match: *`` (the probe still checks the store honours it)."""
        return True

    def list(self, directory: str, recursive: bool) -> list[str]:
        """AZ2: ``find`` when recursive; else one listing with the "/" delimiter
        (adlfs's ``find`` ignores ``maxdepth`` and would list the whole tree below)."""
        if recursive:
            return super().list(directory, recursive)
        top = self._full(directory) if directory else self._base
        want = top + "/"
        strip = len(self._base) + 1
        try:
            entries = self.fs.ls(top, detail=True)
        except FileNotFoundError:
            return []
        return [e["name"][strip:] for e in entries if e.get("type") == "file" and e["name"].startswith(want)]

    def exists(self, path: str) -> bool:
        """AZ2: one HEAD of the blob (a 404 is FileNotFoundError)."""
        self._head(path)
        return True

    def modified_millis(self, path: str) -> int | None:
        """AZ2: the blob's Last-Modified, from one HEAD (adlfs's ``info`` calls it
        ``last_modified``, a name the generic backend does not read)."""
        modified = self._head(path).last_modified
        return None if modified is None else int(modified.timestamp() * 1000)

    def _head(self, path: str) -> Any:
        """The blob's properties, from one HEAD; FileNotFoundError on a 404."""
        from azure.core.exceptions import ResourceNotFoundError

        container, key, _ = self.fs.split_path(self._full(path))

        async def head() -> Any:
            async with self.fs.service_client.get_blob_client(container, key) as blob:
                return await blob.get_blob_properties()

        try:
            return fsspec.asyn.sync(self.fs.loop, head)
        except ResourceNotFoundError as e:
            raise FileNotFoundError(self._full(path)) from e


__all__ = ["AzureBackend"]
