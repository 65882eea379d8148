"""Optional REST authentication: HTTP Basic against a credentials file, or bearer tokens.

Worker settings:

* ``rest.auth.type``: ``none`` (default), ``basic`` or ``bearer``;
* ``rest.auth.credentials.file``: for ``basic``, lines ``user:pbkdf2_sha256$<iterations>$<salt
  b64>$<hash b64>`` (make one with ``connectrt auth hash-password``);
* ``rest.auth.tokens.file``: for ``bearer``, one ``sha256:<hex digest of the token>`` per line
  (``connectrt auth hash-token``), so the file holds no usable secret;
* ``rest.auth.health.open``: ``true`` (default) leaves ``GET /health`` open for probes.

Passwords are compared in constant time, and a user name that is not in the file is checked
against a dummy hash of the same cost, so a failure takes as long whether or not the user
exists. Credentials files are read once at start. :meth:`Authenticator.authenticate` is
CPU-bound (PBKDF2, tens of milliseconds): call it off the event loop (see
:mod:`connectrt.listener.auth_guard`). An Authenticator is read-only once built and safe to
share between threads.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connectrt.errors import ConfigError

__all__ = ["Authenticator", "Principal", "hash_password", "hash_token"]

_ITERATIONS = 200_000


def hash_password(password: str, iterations: int = _ITERATIONS) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    salt_text, digest_text = base64.b64encode(salt).decode(), base64.b64encode(digest).decode()
    return f"pbkdf2_sha256${iterations}${salt_text}${digest_text}"


def _check_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored``; a malformed ``stored`` matches nothing."""
    try:
        scheme, iterations, salt, digest = stored.split("$")
        if scheme != "pbkdf2_sha256":
            return False
        actual = hashlib.pbkdf2_hmac(
            "sha256", password.encode(), base64.b64decode(salt), int(iterations)
        )
        return hmac.compare_digest(actual, base64.b64decode(digest))
    except ValueError:  # also binascii.Error (bad base64)
        return False


def _dummy_hash(users: Mapping[str, str]) -> str:
    """A stored hash no password matches, as costly to check as the users' (the largest
    iteration count among them): what an unknown user name is checked against."""
    iterations = _ITERATIONS
    counts = []
    for stored in users.values():
        parts = stored.split("$")
        if len(parts) == 4 and parts[0] == "pbkdf2_sha256" and parts[1].isdigit():
            counts.append(int(parts[1]))
    if counts:
        iterations = max(counts)
    salt, digest = base64.b64encode(os.urandom(16)), base64.b64encode(os.urandom(32))
    return f"pbkdf2_sha256${iterations}${salt.decode()}${digest.decode()}"


def hash_token(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who a request authenticated as, and the stored credential that matched (a user's
    password hash, or a token's hash): a remembered check is valid only while that credential
    is still configured (:meth:`Authenticator.holds`)."""

    name: str
    credential: str


@dataclass
class Authenticator:
    kind: str = "none"
    users: dict[str, str] = field(default_factory=dict)
    token_hashes: set[str] = field(default_factory=set)
    health_open: bool = True
    _dummy: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._dummy = _dummy_hash(self.users)

    @classmethod
    def from_worker_config(cls, props: Mapping[str, str]) -> Authenticator:
        kind = props.get("rest.auth.type", "none").strip().lower()
        health_open = props.get("rest.auth.health.open", "true").strip().lower() != "false"
        if kind == "none":
            return cls("none", health_open=health_open)
        if kind == "basic":
            path = props.get("rest.auth.credentials.file")
            if not path:
                raise ConfigError(
                    "rest.auth.type=basic needs rest.auth.credentials.file",
                    "rest.auth.credentials.file",
                )
            users = {}
            for line in _lines(path):
                user, sep, stored = line.partition(":")
                if not sep:
                    raise ConfigError(f"Malformed line in {path}: expected user:hash")
                users[user] = stored
            return cls("basic", users=users, health_open=health_open)
        if kind == "bearer":
            path = props.get("rest.auth.tokens.file")
            if not path:
                raise ConfigError(
                    "rest.auth.type=bearer needs rest.auth.tokens.file", "rest.auth.tokens.file"
                )
            return cls("bearer", token_hashes=set(_lines(path)), health_open=health_open)
        raise ConfigError(
            f"Unknown rest.auth.type {kind}: use none, basic or bearer", "rest.auth.type"
        )

    @property
    def enabled(self) -> bool:
        return self.kind != "none"

    def check(self, authorization: str | None) -> bool:
        """Whether the ``Authorization`` header value is accepted (always, without auth)."""
        return not self.enabled or self.authenticate(authorization) is not None

    def authenticate(self, authorization: str | None) -> Principal | None:
        """The principal the header authenticates, or None. CPU-bound for ``basic``; as slow
        for an unknown user as for a wrong password."""
        if not self.enabled or not authorization:
            return None
        scheme, _, credentials = authorization.partition(" ")
        if self.kind == "basic" and scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(credentials).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return None
            stored = self.users.get(user)
            matched = _check_password(password, stored if stored is not None else self._dummy)
            return Principal(user, stored) if matched and stored is not None else None
        if self.kind == "bearer" and scheme.lower() == "bearer":
            digest = hash_token(credentials.strip())
            found = None
            for known in self.token_hashes:  # no early exit: the time does not tell which
                if hmac.compare_digest(digest, known):
                    found = known
            return Principal("token", found) if found is not None else None
        return None

    def subject(self, authorization: str) -> str:
        """Whom the header claims to be, without checking it (cheap): ``user:<name>`` for
        Basic credentials, ``bearer`` for any token, ``malformed`` otherwise. Failures are
        counted per subject (:mod:`connectrt.listener.auth_guard`)."""
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() == "basic":
            try:
                user = base64.b64decode(credentials).decode().partition(":")[0]
            except (ValueError, UnicodeDecodeError):
                return "malformed"
            return f"user:{user}"
        if scheme.lower() == "bearer":
            return "bearer"
        return "malformed"

    def holds(self, principal: Principal) -> bool:
        """Whether ``principal``'s credential is still configured (cheap; no hashing)."""
        if self.kind == "basic":
            return self.users.get(principal.name) == principal.credential
        if self.kind == "bearer":
            return principal.credential in self.token_hashes
        return False

    @property
    def challenge(self) -> str:
        return 'Basic realm="connectrt"' if self.kind == "basic" else "Bearer"


def _lines(path: str) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read {path}: {e.strerror}") from None
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
