"""Errors as the Iceberg REST error model: ``{"error": {"message", "type", "code"}}`` (RS5).

One table maps what the catalog raises (PyIceberg's exceptions, this package's PEP 249
errors, a malformed request) to an HTTP status and the REST exception type clients
match on. Anything unforeseen is a 500 whose message says only that, with the request's
id; its traceback goes to the server's log, never to the client.
"""

from __future__ import annotations

import json
import logging
import uuid

from pydantic import ValidationError
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchIdentifierError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)

from .. import errors

__all__ = ["RequestError", "error_body", "error_for"]

LOG = logging.getLogger("trinitylake.server")


class RequestError(Exception):
    """A request the server refuses, with its HTTP status and REST exception type."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


#: (exception class, HTTP status, REST type), first match wins: subclasses first.
_MAPPING: tuple[tuple[type[BaseException], int, str], ...] = (
    (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (NoSuchTableError, 404, "NoSuchTableException"),
    (NoSuchViewError, 404, "NoSuchViewException"),
    (NoSuchIdentifierError, 400, "BadRequestException"),
    (NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (CommitFailedException, 409, "CommitFailedException"),
    (errors.SerializationError, 409, "CommitFailedException"),
    (errors.CommitFailedError, 409, "CommitFailedException"),
    (errors.ReadOnlyError, 403, "ForbiddenException"),
    (errors.ObjectNotFoundError, 404, "NotFoundException"),
    (errors.ObjectExistsError, 409, "AlreadyExistsException"),
    (errors.ObjectNotEmptyError, 409, "NamespaceNotEmptyException"),
    (errors.ProgrammingError, 400, "BadRequestException"),  # names, definitions, locations
    (errors.IntegrityError, 400, "BadRequestException"),  # e.g. a null property (iceberg P14)
    (errors.DataError, 400, "BadRequestException"),
    (errors.NotSupportedError, 406, "UnsupportedOperationException"),
    (errors.CorruptFileError, 500, "ServerErrorException"),  # names the damaged file
    (errors.UnsupportedFormatError, 500, "ServerErrorException"),
    (errors.CommitOutcomeUnknownError, 500, "CommitStateUnknownException"),
    # A file the lakehouse names is gone: damage, not a passing outage (503, which clients
    # retry, would have them ask again and again for the same missing file).
    (errors.MissingFileError, 500, "ServerErrorException"),
    (errors.StorageError, 503, "ServiceUnavailableException"),
    (FileNotFoundError, 404, "NotFoundException"),  # e.g. register of a missing metadata file
    (NotImplementedError, 406, "UnsupportedOperationException"),
    (ValidationError, 400, "BadRequestException"),
    (ValueError, 400, "BadRequestException"),
)


def error_body(status: int, kind: str, message: str) -> bytes:
    """The IcebergErrorResponse JSON for one error."""
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


def _message(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        text = f"invalid request: {first.get('msg', 'does not match the schema')}"
        return f"{text} at {where!r}" if where else text
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0] if "\n" in text and isinstance(exc, ValueError) else text


def error_for(exc: BaseException, *, committing: bool = False) -> tuple[int, str, str]:
    """(HTTP status, REST type, message) for ``exc`` (RS5). ``committing``: the request
    was a commit, where a failure of unknown kind may have published it: 500
    CommitStateUnknownException, as the spec asks, so the client re-reads the table."""
    if isinstance(exc, RequestError):
        return exc.status, exc.kind, str(exc)
    for cls, status, kind in _MAPPING:
        if isinstance(exc, cls):
            if status >= 500:
                LOG.warning("request failed: %s: %s", type(exc).__name__, exc)
            return status, kind, _message(exc)
    incident = uuid.uuid4().hex[:12]
    LOG.error("internal error %s", incident, exc_info=exc)
    kind = "CommitStateUnknownException" if committing else "InternalServerError"
    return 500, kind, f"internal server error (incident {incident}; the server's log has the details)"
