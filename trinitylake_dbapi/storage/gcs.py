"""Google Cloud Storage (``gs://``, ``gcs://``) through gcsfs.

Everything but the points below is ``FsspecBackend``'s (objectstore O1-O3); the row of
``gs`` in storage/schemes.py names the filesystem class and the error mapping.

* GS1. Exclusive create is gcsfs's ``pipe_file(mode="create")``: one upload with
  ``ifGenerationMatch=0``, which GCS refuses with 412 (gcsfs: FileExistsError) when the
  object exists; probed once per root (O2), as on S3.
* GS2. The filesystem is gcsfs's plain ``GCSFileSystem`` (the row's ``filesystem``), not
  the class fsspec's registry names for ``gs``: gcsfs 2026.x's registry class looks up
  each bucket's layout over gRPC first, an extra request per bucket that an emulator
  or a host without gRPC egress answers only after a 60-second timeout.
* GS3. Requests: a read is one GET (``cat_file``), ``exists`` one GET of the object's
  metadata (``info`` would list the prefix too when the object is missing), a write
  one upload, a delete one DELETE per key (gcsfs's batched ``rm`` expands globs,
  which objectstore's rule O1 forbids).
"""

from __future__ import annotations

import fsspec

from .objectstore import FsspecBackend


class GcsBackend(FsspecBackend):
    """A root on Google Cloud Storage (rules GS1-GS3)."""

    @classmethod
    def drives(cls, fs: fsspec.AbstractFileSystem) -> bool:
        """gcsfs's filesystem (its ``call`` and ``split_path`` are used)."""
        from gcsfs.core import GCSFileSystem

        return isinstance(fs, GCSFileSystem)

    def has_conditional_put(self) -> bool:
        """GS1: ``ifGenerationMatch=0`` (the probe still checks the store honours it)."""
        return True

    def exists(self, path: str) -> bool:
        """GS3: one GET of the object's metadata (a 404 is gcsfs's FileNotFoundError)."""
        bucket, key, _ = self.fs.split_path(self._full(path))
        self.fs.call("GET", "b/{}/o/{}", bucket, key, json_out=True)
        return True


__all__ = ["GcsBackend"]
