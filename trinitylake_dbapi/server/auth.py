"""Bearer tokens for the REST server (RS6).

A token file holds one token per line; blank lines and lines starting with ``#`` are
ignored. Tokens are compared in constant time (``hmac.compare_digest``) against every
known token, so neither a match's position nor a prefix shows in the timing.
"""

from __future__ import annotations

import hmac
import os
import stat
from typing import Sequence

__all__ = ["MIN_TOKEN_LENGTH", "TokenFileError", "load_tokens", "Tokens"]

#: Shorter tokens are refused when the file is read: they can be guessed.
MIN_TOKEN_LENGTH = 16


class TokenFileError(ValueError):
    """The token file cannot be used (missing, empty, a token too short)."""


def load_tokens(path: str) -> tuple[list[str], list[str]]:
    """(tokens, warnings) from the token file at ``path``. Raises TokenFileError naming
    the file and the line when it cannot be read, holds no token, or a token is shorter
    than MIN_TOKEN_LENGTH or holds whitespace."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as e:
        raise TokenFileError(f"token file {path!r}: cannot read it: {e}") from e
    tokens = []
    for number, line in enumerate(lines, start=1):
        token = line.strip()
        if not token or token.startswith("#"):
            continue
        if len(token) < MIN_TOKEN_LENGTH or any(c.isspace() for c in token):
            raise TokenFileError(
                f"token file {path!r}, line {number}: a token is at least {MIN_TOKEN_LENGTH} "
                "characters without spaces (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
        tokens.append(token)
    if not tokens:
        raise TokenFileError(f"token file {path!r} holds no token (one per line)")
    warnings = []
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        warnings.append(f"token file {path!r} is readable by other users (chmod 600 it)")
    return tokens, warnings


class Tokens:
    """The accepted bearer tokens; ``None`` accepts every request (--insecure-no-auth)."""

    def __init__(self, tokens: Sequence[str] | None) -> None:
        self._tokens = None if tokens is None else [t.encode() for t in tokens]

    @property
    def required(self) -> bool:
        return self._tokens is not None

    def accepts(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries a known bearer token."""
        if self._tokens is None:
            return True
        if not authorization:
            return False
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        candidate = given.strip().encode()
        found = False
        for token in self._tokens:  # every one, so the time does not tell which matched
            found |= hmac.compare_digest(candidate, token)
        return found
