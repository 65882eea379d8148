"""What a connector's client overrides may make the worker do, whatever the override policy.

``producer.override.*``, ``consumer.override.*`` and ``admin.override.*`` reach librdkafka, and a
few librdkafka settings do more than tune a Kafka connection. :class:`OverrideSafety` refuses,
in connector configurations only (the worker's own file is trusted), those that would make the
worker:

* run a command, load code or install a callback (:data:`CODE_KEYS`): ``sasl.kerberos.kinit.cmd``
  is a shell command, ``plugin.library.paths`` and ``ssl.engine.location`` are ``dlopen()``\\ ed,
  ``ssl.providers`` / ``ssl.engine.id`` load OpenSSL modules, the ``*_cb`` keys are callbacks.
  Refused always, as is any value inserted into the Kerberos kinit shell command
  (``%{sasl.kerberos.principal}``...) that holds characters a shell would interpret;
* write files (``offset.store.path``, ``offset.store.method``): refused always;
* fetch a URL (:data:`URL_KEYS`: the OIDC token endpoint; Azure IMDS metadata authentication):
  allowed only for URLs listed, exactly, in the worker setting
  ``connector.client.config.override.allowed.urls`` (empty by default: none), as Kafka 4.0 does
  with ``org.apache.kafka.sasl.oauthbearer.allowed.urls`` (CVE-2025-27817);
* read a file (:data:`FILE_KEYS`: ``ssl.*.location``, ``https.ca.location``, the keytab, the
  OIDC assertion files): allowed only for paths that resolve (symbolic links followed) inside a
  directory listed in ``connector.client.config.override.allowed.directories`` (empty by
  default: none);
* use a JAAS login module Kafka disallows (``JndiLoginModule``, ``LdapLoginModule`` in
  ``sasl.jaas.config``; CVE-2023-25194, CVE-2025-27818). connectrt translates only the PLAIN and
  SCRAM modules (:mod:`~connectrt.runtime.clients.security`) and would refuse these anyway when
  a task's clients are built; the check makes the refusal a 400 with Kafka's reason.

Refusal messages name the key and never quote its value (a URL or a path may hold a secret).
Checked at validate, create and update (400) and again when a task's clients are built, on the
resolved values (what librdkafka would get). Immutable; safe to share between threads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALLOWED_DIRECTORIES_CONFIG",
    "ALLOWED_URLS_CONFIG",
    "AZURE_IMDS_TOKEN_URL",
    "CODE_KEYS",
    "DEFAULT_KINIT_CMD",
    "FILE_KEYS",
    "URL_KEYS",
    "OverrideSafety",
]

ALLOWED_URLS_CONFIG = "connector.client.config.override.allowed.urls"
ALLOWED_DIRECTORIES_CONFIG = "connector.client.config.override.allowed.directories"

_SHELL = "makes the worker run a shell command"
_LIBRARY = "makes the worker load a shared library"
_OPENSSL = "makes the worker load an OpenSSL module"
_CALLBACK = "installs a callback in the worker"
_WRITES = "makes the worker write files"

CODE_KEYS: Mapping[str, str] = {
    "sasl.kerberos.kinit.cmd": _SHELL,
    "plugin.library.paths": _LIBRARY,
    "interceptors": _LIBRARY,
    "ssl.engine.location": _LIBRARY,
    "ssl.engine.id": _OPENSSL,
    "ssl.providers": _OPENSSL,
    "offset.store.path": _WRITES,
    "offset.store.method": _WRITES,
    **{
        key: _CALLBACK
        for key in (
            # librdkafka's
            "error_cb",
            "throttle_cb",
            "stats_cb",
            "log_cb",
            "background_event_cb",
            "socket_cb",
            "connect_cb",
            "closesocket_cb",
            "open_cb",
            "resolve_cb",
            "opaque",
            "default_topic_conf",
            "ssl_engine_callback_data",
            "ssl.certificate.verify_cb",
            "oauthbearer_token_refresh_cb",
            "consume_cb",
            "rebalance_cb",
            "offset_commit_cb",
            "dr_cb",
            "dr_msg_cb",
            "partitioner_cb",
            # confluent-kafka's (Python callables or objects)
            "logger",
            "oauth_cb",
            "on_delivery",
            "on_commit",
            "default.topic.config",
        )
    },
}
"""Client keys a connector may never override, with what they would make the worker do."""

URL_KEYS = frozenset(
    {
        "sasl.oauthbearer.token.endpoint.url",
        # Java clients' (librdkafka does not know it; checked as Kafka does).
        "sasl.oauthbearer.jwks.endpoint.url",
    }
)
"""Client keys whose value is a URL the worker fetches."""

AZURE_IMDS_TOKEN_URL = "http://169.254.169.254/metadata/identity/oauth2/token"
"""What librdkafka fetches with ``sasl.oauthbearer.metadata.authentication.type=azure_imds``
when no token endpoint URL is set."""

FILE_KEYS = frozenset(
    {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.keystore.location",
        "ssl.crl.location",
        "https.ca.location",
        "sasl.kerberos.keytab",
        "sasl.oauthbearer.assertion.file",
        "sasl.oauthbearer.assertion.private.key.file",
        "sasl.oauthbearer.assertion.jwt.template.file",
        # Java clients' (librdkafka refuses them; checked as files all the same).
        "ssl.truststore.location",
        "sasl.oauthbearer.assertion.template.file",
    }
)
"""Client keys whose value is a path the worker reads."""

_PROBE_KEYS = frozenset({"ssl.ca.location", "https.ca.location"})
"""Keys where ``probe`` means librdkafka's list of system CA locations, not a path."""

DEFAULT_KINIT_CMD = (
    'kinit -R -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal} || '
    'kinit -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal}'
)
"""librdkafka's default ``sasl.kerberos.kinit.cmd``; ``%{key}`` is replaced by the client's
value of ``key``, unquoted, before the command goes to the shell."""

_INTERPOLATED = re.compile(r"%\{([^}]*)\}")
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_.@/:+=,][A-Za-z0-9_.@/:+=,-]*")
_DISALLOWED_LOGIN_MODULES = (
    "com.sun.security.auth.module.JndiLoginModule",
    "com.sun.security.auth.module.LdapLoginModule",
)
_CLIENT_KINDS = ("producer", "consumer", "admin")


def _interpolated_keys(worker_props: Mapping[str, str]) -> frozenset[str]:
    """Client keys the worker's kinit commands (or librdkafka's default) insert into a shell."""
    commands = [DEFAULT_KINIT_CMD]
    commands += [
        str(worker_props[f"{kind}.sasl.kerberos.kinit.cmd"])
        for kind in _CLIENT_KINDS
        if f"{kind}.sasl.kerberos.kinit.cmd" in worker_props
    ]
    return frozenset(m.strip() for cmd in commands for m in _INTERPOLATED.findall(cmd))


def _listed(value: object) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


@dataclass(frozen=True)
class OverrideSafety:
    """The worker's limits on what client overrides may fetch, read or run (see the module).

    ``allowed_urls``: URLs connectors may name (exact match); ``allowed_directories``: resolved
    directories under which connectors may name files; ``shell_keys``: client keys inserted into
    the kinit shell command, whose values must be plain words.
    """

    allowed_urls: frozenset[str] = frozenset()
    allowed_directories: tuple[str, ...] = ()
    shell_keys: frozenset[str] = _interpolated_keys({})

    @classmethod
    def create(
        cls,
        allowed_urls: Iterable[str] = (),
        allowed_directories: Iterable[str] = (),
        worker_props: Mapping[str, str] | None = None,
    ) -> OverrideSafety:
        """Limits from the worker's settings (directories resolved now, symbolic links
        followed); ``worker_props`` (the worker file) supplies its own kinit commands."""
        return cls(
            frozenset(u.strip() for u in allowed_urls if u.strip()),
            tuple(os.path.realpath(d.strip()) for d in allowed_directories if d.strip()),
            _interpolated_keys(worker_props or {}),
        )

    @classmethod
    def from_worker_config(cls, config: Any) -> OverrideSafety:
        """The limits of a WorkerConfig (or a mapping of worker settings, parsed or raw)."""
        originals = getattr(config, "originals", None)
        props: Mapping[str, Any] = originals if originals is not None else config
        getter = config.get if hasattr(config, "get") else props.get
        return cls.create(
            _listed(getter(ALLOWED_URLS_CONFIG)),
            _listed(getter(ALLOWED_DIRECTORIES_CONFIG)),
            {k: str(v) for k, v in props.items()},
        )

    def refusals(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """Client key -> why it is refused, for one client kind's overrides (unprefixed keys,
        resolved values). Empty when every override is safe."""
        out: dict[str, str] = {}
        for key, raw in overrides.items():
            reason = self._refusal(key, "" if raw is None else str(raw), overrides)
            if reason is not None:
                out[key] = reason
        return out

    def _refusal(self, key: str, value: str, overrides: Mapping[str, str]) -> str | None:
        what = CODE_KEYS.get(key)
        if what is not None:
            return (
                f"'{key}' may not be overridden in a connector configuration, whatever the "
                f"override policy: it {what}. Only the worker's configuration file may set it."
            )
        if key in self.shell_keys and value and not _SHELL_SAFE.fullmatch(value):
            return (
                f"The value of '{key}' is not allowed in a connector configuration: the worker "
                "inserts it into its Kerberos kinit shell command, so it may hold only letters, "
                "digits and . _ @ / : + = , - (and may not start with -)."
            )
        if key in URL_KEYS and value.strip() and value.strip() not in self.allowed_urls:
            return self._url_refusal(key)
        if (
            key == "sasl.oauthbearer.metadata.authentication.type"
            and value.strip().lower() not in ("", "none")
            and not str(overrides.get("sasl.oauthbearer.token.endpoint.url") or "").strip()
            and AZURE_IMDS_TOKEN_URL not in self.allowed_urls
        ):
            return self._url_refusal(key, AZURE_IMDS_TOKEN_URL)
        if key in FILE_KEYS and value.strip():
            if key in _PROBE_KEYS and value.strip() == "probe":
                return None
            if not self._file_allowed(value.strip()):
                return (
                    f"The path given for '{key}' is not allowed in a connector configuration: "
                    f"the worker would read it. Only paths inside a directory listed in the "
                    f"worker setting {ALLOWED_DIRECTORIES_CONFIG} may be given (none by "
                    "default)."
                )
        if key == "sasl.jaas.config":
            for module in _DISALLOWED_LOGIN_MODULES:
                if re.search(rf"(?<![\w.$]){re.escape(module)}(?![\w$])", value):
                    return (
                        f"{module} is not allowed in '{key}' (as in Kafka: CVE-2023-25194, "
                        "CVE-2025-27818). connectrt translates only the PLAIN and SCRAM login "
                        "modules of sasl.jaas.config (into sasl.username and sasl.password)."
                    )
        return None

    def _url_refusal(self, key: str, implied: str | None = None) -> str:
        fetched = f"the worker would fetch {implied}" if implied else "the worker would fetch it"
        return (
            f"The URL given for '{key}' is not allowed in a connector configuration: {fetched}. "
            f"Only the URLs listed in the worker setting {ALLOWED_URLS_CONFIG} may be used "
            "(none by default)."
        )

    def _file_allowed(self, path: str) -> bool:
        if "\x00" in path or any(c in path for c in "\r\n"):
            return False
        resolved = os.path.realpath(path)
        return any(
            resolved == d or resolved.startswith(d.rstrip(os.sep) + os.sep)
            for d in self.allowed_directories
        )
