"""Whether a broker's certificate failed verification because it names another host.

librdkafka reports an untrusted certificate chain and a certificate whose subject alternative
names miss the address the client used in the same words ("certificate verify failed: broker
certificate could not be verified, verify that ssl.ca.location is correctly configured"): its
message keeps OpenSSL's error but drops OpenSSL's verify result, which tells the two apart.
:func:`names_another_host` repeats the TLS handshake with Python's :mod:`ssl` (OpenSSL too), with
the client's CA settings (``ssl.ca.location``, ``ssl.ca.pem``; the system's CAs without them,
as librdkafka) and its host name check, and reads that verify result.

Called only once librdkafka has reported a failed verification, at start-up; one TCP
connection and one handshake, bounded by ``timeout``. A probe that cannot tell (the broker
unreachable, an unreadable CA file, a handshake failing for another reason) answers False:
the caller keeps its first diagnosis. Plain functions; thread-safe.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["checks_host_name", "names_another_host"]

_HOST_MISMATCH_CODES = frozenset({62, 64})
"""OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH."""


def checks_host_name(config: Mapping[str, Any]) -> bool:
    """Whether a client with librdkafka ``config`` checks the broker's host name
    (``ssl.endpoint.identification.algorithm``: ``https``, librdkafka's default since 2.0, as
    Kafka's; ``none`` does not)."""
    value = config.get("ssl.endpoint.identification.algorithm")
    return value is None or str(value).strip().lower() == "https"


def _first_address(bootstrap: str) -> tuple[str, int] | None:
    first = bootstrap.split(",")[0].strip()
    for scheme in ("ssl://", "sasl_ssl://"):
        first = first.removeprefix(scheme)
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _context(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context()  # the chain and the host name are checked
    location = str(config.get("ssl.ca.location") or "").strip()
    if location and location != "probe":
        if Path(location).is_dir():
            context.load_verify_locations(capath=location)
        else:
            context.load_verify_locations(cafile=location)
    pem = str(config.get("ssl.ca.pem") or "").strip()
    if pem:
        context.load_verify_locations(cadata=pem)
    return context


def names_another_host(config: Mapping[str, Any], timeout: float = 3.0) -> bool:
    """Whether the broker at the first of ``config``'s ``bootstrap.servers`` presents a
    certificate the client's CAs trust but whose names miss the host the client connects to
    (False when the client does not check host names, or when the probe cannot tell)."""
    if not checks_host_name(config):
        return False
    address = _first_address(str(config.get("bootstrap.servers") or ""))
    if address is None:
        return False
    try:
        context = _context(config)
        with (
            socket.create_connection(address, timeout=timeout) as sock,
            context.wrap_socket(sock, server_hostname=address[0]),
        ):
            return False
    except ssl.SSLCertVerificationError as e:
        return e.verify_code in _HOST_MISMATCH_CODES
    except (OSError, ValueError):  # ssl.SSLError is an OSError
        return False
