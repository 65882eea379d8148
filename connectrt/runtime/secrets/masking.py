"""Keeping secrets out of REST responses and logs.

Three tools:

* :class:`SecretMasker` decides which config keys are secret (PASSWORD-typed in the
  definition, or a name matching :data:`DEFAULT_SECRET_PATTERNS`), masks their values as
  ``[hidden]`` for output (:meth:`~SecretMasker.mask`), and undoes the mask on input
  (:meth:`~SecretMasker.merge_hidden`) so that GET -> edit -> PUT never overwrites a secret
  with the literal ``[hidden]``.
* :class:`RedactingFilter`, a :class:`logging.Filter` for handlers, that replaces every
  registered secret value in log records by ``[hidden]`` (in every form of
  :func:`~connectrt.runtime.redaction.secret_forms`). The runtime registers the values it
  obtains from config providers and the values of secret keys when it resolves a config, with
  the process's :class:`~connectrt.runtime.redaction.Redactor`, the one every error path
  redacts with.
* :func:`install_log_redaction` keeps those secrets out of every log record of the process (a
  record factory and a filter on the root logger's handlers); :func:`install_redacting_filter`
  puts one filter on every handler of a logger.

Masking is by key name and type, and, for every other key, by looking inside URL-like values:
a password embedded in ``connection.url=postgresql://u:pw@h/db`` or ``...?password=pw`` is
shown as ``[hidden]`` (:mod:`connectrt.runtime.secrets.url_secrets`), and the herder registers it
with the log filter. Better still, put such secrets behind a config provider reference: the
reference is shown as written and the resolved value is redacted from logs.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from connectrt.api.config import ConfigDef, ConfigType, Password
from connectrt.errors import ConfigError
from connectrt.runtime.redaction import MIN_REDACTED_LENGTH, Redactor, process_redactor
from connectrt.runtime.secrets.providers import is_single_reference
from connectrt.runtime.secrets.url_secrets import mask_url_secrets, url_secrets

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "HIDDEN",
    "MIN_REDACTED_LENGTH",
    "RedactingFilter",
    "SecretMasker",
    "install_log_redaction",
    "install_redacting_filter",
    "is_secret",
    "mask",
    "merge_hidden",
    "redact_record",
]

HIDDEN = Password.HIDDEN  # "[hidden]", as Kafka shows passwords

# Separator between name parts: Kafka style (dots), env/snake style, or kebab.
_SEP = r"[._-]?"

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    # Passwords and passphrases anywhere in the name (camelCase too: dbPassword).
    r"passw(?:or)?d|passphrase",
    # Secrets (client.secret, aws.secret.access.key, clientSecret), but not the name of a
    # secrets manager service (secretsmanager.region).
    rf"secret(?!s?{_SEP}manager)",
    # Tokens (bearer.auth.token, sas.token, accessToken), not an OAuth token endpoint URL
    # (sasl.oauthbearer.token.endpoint.url) nor a tokenizer.
    rf"token(?!izer|{_SEP}endpoint)",
    # Credentials (gcs.credentials.json), not the *kind* of credentials
    # (basic.auth.credentials.source=USER_INFO) nor a credentials provider class.
    rf"credential(?!s?{_SEP}(?:source|provider))",
    # API keys and private keys (api.key, apikey, api_key, private.key, privateKey).
    rf"api{_SEP}key|private{_SEP}key",
    # Key material and cloud keys: ssl.key(.password), ssl.keystore.key, account/access/
    # signing/encryption/master/shared keys; not an access key *id* (aws.access.key.id).
    # A bare "key" is never matched: key.converter, key.ignore, topic.key are innocent.
    rf"(?<![a-z])(?:ssl|keystore|account|signing|encryption|master|shared){_SEP}key(?![a-z])",
    rf"(?<![a-z])access{_SEP}key(?![a-z])(?!{_SEP}id)",
    # JAAS login config (embeds username and password) and Schema Registry user info
    # (basic.auth.user.info = user:password).
    rf"jaas{_SEP}config|user{_SEP}info",
    # Azure-style connection strings carry the account key.
    rf"connection{_SEP}string",
)
"""Regexes searched (case-insensitively) in a key name; a match makes the key secret.

Searching (not full-matching) covers prefixed client overrides and nested plugin settings:
``producer.override.sasl.jaas.config``, ``consumer.override.ssl.key.password``,
``value.converter.basic.auth.user.info``, ``transforms.x.api.key``. Names that only contain
``key`` as a record-key term (``key.converter``, ``key.ignore``, ``pk.fields``, ``topic.key``,
``message.key.field``) do not match.
"""

# Keys of these types cannot hold secret material; a matching name is a false positive
# (e.g. an INT ``max.token.count`` or a BOOLEAN ``secret.rotation.enable``).
_NEVER_SECRET_TYPES = frozenset(
    {
        ConfigType.BOOLEAN,
        ConfigType.INT,
        ConfigType.SHORT,
        ConfigType.LONG,
        ConfigType.DOUBLE,
        ConfigType.CLASS,
    }
)


class SecretMasker:
    """Decides which keys are secret and masks/unmasks their values. Immutable; thread-safe."""

    def __init__(self, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> None:
        self.patterns = tuple(patterns)
        self._regex = (
            re.compile("|".join(f"(?:{p})" for p in self.patterns), re.IGNORECASE)
            if self.patterns
            else None
        )

    def is_secret(self, key: str, definition: ConfigDef | None = None) -> bool:
        """True for PASSWORD-typed keys of ``definition`` and for names matching the patterns.

        A key the definition types as a number, boolean or class is never secret.
        """
        if definition is not None:
            ck = definition.keys.get(key)
            if ck is not None:
                if ck.type is ConfigType.PASSWORD:
                    return True
                if ck.type in _NEVER_SECRET_TYPES:
                    return False
        return self._regex is not None and self._regex.search(key) is not None

    def secret_keys(self, config: Mapping[str, object], definition: ConfigDef | None) -> set[str]:
        return {k for k in config if self.is_secret(k, definition)}

    def mask(
        self, config: Mapping[str, str | None], definition: ConfigDef | None = None
    ) -> dict[str, str | None]:
        """A copy of ``config`` with secret values replaced by ``[hidden]``.

        Exception: a value that is *exactly one* config provider reference
        (``${file:/secrets.properties:db.password}``) is returned as written: it names where
        the secret lives but holds none, and Kafka returns such raw values too. A value that
        mixes a reference with other text (``${env:USER}:hunter2``) is hidden. None stays None.
        In the values of other keys, a secret embedded in a URL (userinfo password, a
        ``password=`` parameter) is replaced by ``[hidden]`` and the rest kept.
        """
        out: dict[str, str | None] = {}
        for k, v in config.items():
            if v is None:
                out[k] = v
            elif self.is_secret(k, definition) and not is_single_reference(v):
                out[k] = HIDDEN
            else:
                out[k] = mask_url_secrets(v)
        return out

    def embedded_secrets(self, config: Mapping[str, str | None]) -> list[str]:
        """The secrets embedded in URL-like values of ``config`` (for the log redactor)."""
        return [secret for v in config.values() if v for secret in url_secrets(v)]

    def merge_hidden(
        self,
        new: Mapping[str, str | None],
        stored: Mapping[str, str | None],
        definition: ConfigDef | None = None,
    ) -> dict[str, str | None]:
        """Undo masking in an incoming (PUT/PATCH) config.

        A value of exactly ``[hidden]`` means "keep what is stored": it is replaced by the
        stored value whenever one exists, whether or not the key is secret under the current
        definition (the mask may have been computed with another one, and writing the literal
        ``[hidden]`` over a real secret would be the worse mistake). With no stored value,
        ``[hidden]`` for a secret key is rejected with ConfigError naming the key; for other
        keys it is kept literally. A URL whose embedded secret is ``[hidden]`` and which is
        otherwise the stored URL (as a GET showed it) gets the stored URL back; one that
        differs is rejected with ConfigError (the literal ``[hidden]`` would become the
        password). None (a PATCH delete) and every other value pass through.
        """
        out: dict[str, str | None] = {}
        for k, v in new.items():
            if v is not None and v != HIDDEN and url_secrets(v.replace(HIDDEN, "x")):
                previous = stored.get(k)
                if HIDDEN in v:
                    if previous is None or mask_url_secrets(previous) != v:
                        raise ConfigError(
                            f"Configuration '{k}' has an embedded {HIDDEN} but is not the "
                            "stored URL as shown; send the URL with its real credentials",
                            k,
                        )
                    out[k] = previous
                    continue
            if v == HIDDEN:
                previous = stored.get(k)
                if previous is not None:
                    out[k] = previous
                    continue
                if self.is_secret(k, definition):
                    raise ConfigError(
                        f"Configuration '{k}' was sent as {HIDDEN} but no value is stored for "
                        "it; send the real value or a config provider reference",
                        k,
                    )
            out[k] = v
        return out


_DEFAULT_MASKER = SecretMasker()


def is_secret(key: str, definition: ConfigDef | None = None) -> bool:
    """:meth:`SecretMasker.is_secret` with the default patterns."""
    return _DEFAULT_MASKER.is_secret(key, definition)


def mask(
    config: Mapping[str, str | None], definition: ConfigDef | None = None
) -> dict[str, str | None]:
    """:meth:`SecretMasker.mask` with the default patterns."""
    return _DEFAULT_MASKER.mask(config, definition)


def merge_hidden(
    new: Mapping[str, str | None],
    stored: Mapping[str, str | None],
    definition: ConfigDef | None = None,
) -> dict[str, str | None]:
    """:meth:`SecretMasker.merge_hidden` with the default patterns."""
    return _DEFAULT_MASKER.merge_hidden(new, stored, definition)


class RedactingFilter(logging.Filter):
    """A handler filter that replaces every secret of its :class:`Redactor` with ``[hidden]``.

    Install it on *handlers* (a filter on a logger does not see records propagated from child
    loggers); :func:`install_log_redaction` also redacts every record the process creates.
    When the formatted message, an argument, the exception text or the stack text of a record
    contains a secret (in any of the forms of
    :func:`~connectrt.runtime.redaction.secret_forms`), the record is rewritten: ``msg``
    becomes the redacted formatted message and ``args`` is emptied, ``exc_text``/``stack_info``
    are redacted. Records without secrets are left untouched. Never drops a record.

    ``redactor`` is the set of secrets (default: a private one; the worker's filters share
    :func:`~connectrt.runtime.redaction.process_redactor`). Thread-safe: :meth:`register` may
    run on any thread while handlers filter on others.
    """

    def __init__(self, name: str = "", redactor: Redactor | None = None) -> None:
        super().__init__(name)
        self.redactor = redactor if redactor is not None else Redactor()

    def register(self, value: str | None) -> None:
        """Redact ``value`` from now on (ignored if None or shorter than 4 characters)."""
        self.redactor.register(value)

    def register_all(self, values: Iterable[object]) -> None:
        self.redactor.register_all(values)

    def hold(self, values: Iterable[object]) -> list[str]:
        """Redact ``values`` until :meth:`release` (see :meth:`Redactor.hold`)."""
        return self.redactor.hold(values)

    def release(self, held: Iterable[str]) -> None:
        self.redactor.release(held)

    def secrets_in(self, texts: Iterable[str]) -> list[str]:
        """The registered values that occur in any of ``texts``."""
        return self.redactor.secrets_in(texts)

    def unregister(self, value: str) -> None:
        self.redactor.unregister(value)

    def clear(self) -> None:
        self.redactor.clear()

    def __len__(self) -> int:
        return len(self.redactor)

    def redact(self, text: str) -> str:
        """``text`` with every registered value replaced by ``[hidden]``."""
        return self.redactor.redact(text)

    def redact_bytes(self, data: bytes) -> bytes:
        """:meth:`redact` for UTF-8 bytes (see :meth:`Redactor.redact_bytes`)."""
        return self.redactor.redact_bytes(data)

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record, self.redactor)
        return True


def redact_record(record: logging.LogRecord, redactor: Redactor) -> None:
    """Rewrite ``record`` in place so that no secret of ``redactor`` is left in it (see
    :class:`RedactingFilter`)."""
    pattern = redactor.pattern
    if pattern is None:
        return
    try:
        message = record.getMessage()
    except Exception:
        return  # a broken format string; logging reports it when the handler formats
    leaks = pattern.search(message) is not None or _args_leak(pattern, record.args)
    if leaks:
        record.msg = pattern.sub(HIDDEN, message)
        record.args = ()
    exc_text = record.exc_text
    if not exc_text and record.exc_info:
        exc_text = _EXC_FORMATTER.formatException(record.exc_info)
    # Cache the redacted traceback where Formatter.format looks first; when nothing
    # leaks, leave exc_text alone so custom formatters still format the exception.
    if exc_text and pattern.search(exc_text) is not None:
        record.exc_text = pattern.sub(HIDDEN, exc_text)
    if record.stack_info:
        record.stack_info = pattern.sub(HIDDEN, record.stack_info)


_EXC_FORMATTER = logging.Formatter()


def _args_leak(
    pattern: re.Pattern[str], args: tuple[object, ...] | Mapping[str, object] | None
) -> bool:
    """Whether an argument (even one the format string does not use) holds a secret."""
    if not args:
        return False
    values = args.values() if isinstance(args, Mapping) else args
    for a in values:
        try:
            text = a if isinstance(a, str) else f"{a!s}\n{a!r}"
        except Exception:
            continue
        if pattern.search(text) is not None:
            return True
    return False


def install_redacting_filter(
    root_logger: logging.Logger | None = None, redacting_filter: RedactingFilter | None = None
) -> RedactingFilter:
    """Put one :class:`RedactingFilter` on every handler of ``root_logger`` (default: root).

    Idempotent: a RedactingFilter already on one of the handlers is reused (unless one is
    passed) and handlers that already carry it are skipped; a new one redacts the secrets of
    :func:`~connectrt.runtime.redaction.process_redactor`. Handlers added later need
    ``handler.addFilter(the_returned_filter)`` (or :func:`install_log_redaction`).
    """
    logger = root_logger if root_logger is not None else logging.getLogger()
    f = redacting_filter
    if f is None:
        found = next(
            (x for h in logger.handlers for x in h.filters if isinstance(x, RedactingFilter)),
            None,
        )
        # Not "found or ...": a filter with no secrets yet has len() 0.
        f = found if found is not None else RedactingFilter(redactor=process_redactor())
    for h in logger.handlers:
        if f not in h.filters:
            h.addFilter(f)
    return f


class _RedactingRecordFactory:
    """A log record factory that redacts each record as it is created (see
    :func:`install_log_redaction`). Wraps the factory that was installed before it."""

    def __init__(self, previous: Callable[..., logging.LogRecord], redactor: Redactor) -> None:
        self.previous = previous
        self.redactor = redactor

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.previous(*args, **kwargs)
        if self.redactor.pattern is not None:
            redact_record(record, self.redactor)
        return record


_FACTORY_LOCK = threading.Lock()


def install_log_redaction(redactor: Redactor | None = None) -> RedactingFilter:
    """Keep every secret of ``redactor`` (default: the process's) out of this process's logs.

    Two layers, both idempotent: a log record factory that redacts every record any logger
    creates (the runtime's, a plugin's, a library's, whatever handler later writes it, pytest's
    capture included), and a :class:`RedactingFilter` on every handler the root logger has now
    (for records made without the factory, e.g. ``logging.makeLogRecord``). Returns that filter.
    Call once the root logger's handlers are configured (the CLI's ``basicConfig``).
    """
    redactor = redactor if redactor is not None else process_redactor()
    with _FACTORY_LOCK:
        current = logging.getLogRecordFactory()
        factory: Any = current
        while isinstance(factory, _RedactingRecordFactory):
            if factory.redactor is redactor:
                break
            factory = factory.previous
        else:
            logging.setLogRecordFactory(_RedactingRecordFactory(current, redactor))
    existing = next(
        (
            x
            for h in logging.getLogger().handlers
            for x in h.filters
            if isinstance(x, RedactingFilter) and x.redactor is redactor
        ),
        None,
    )
    if existing is None:
        existing = RedactingFilter(redactor=redactor)
    return install_redacting_filter(logging.getLogger(), existing)
