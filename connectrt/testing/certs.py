"""Test certificates made with ``openssl``: a CA, a server and a client certificate, and the
PKCS12 and PEM stores Kafka brokers and Kafka Connect-style clients read.

:func:`make_pki` writes into one folder, in a second or so (EC P-256 keys):

* ``ca.pem`` (a CA certificate, the truststore of both sides) and ``ca.key``;
* ``server.p12`` (PKCS12: the broker's key and its certificate, signed by the CA, naming
  ``localhost`` and ``127.0.0.1`` as DNS and IP subject alternative names, then the CA);
* ``client.p12`` (PKCS12: a client key and certificate signed by the CA) and
  ``client-keystore.pem`` (the same as Kafka's PEM keystore: the private key, encrypted with
  the store password in PKCS#8, followed by the certificate chain);
* ``other-ca.pem``: a CA that signed nothing here (a "wrong CA" truststore);
* ``elsewhere.p12`` (PKCS12: a second broker key and certificate signed by the CA, naming
  only ``broker.elsewhere.invalid``: a client at ``127.0.0.1`` or ``localhost`` that checks
  host names refuses it).

Every store and encrypted key uses :attr:`Pki.password`. Needs the ``openssl`` command (1.1.1
or 3.x). Plain functions, no shared state; safe from any thread on different folders.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ELSEWHERE", "Pki", "make_pki"]

_DAYS = "3650"

ELSEWHERE = "broker.elsewhere.invalid"
"""The one host name ``elsewhere.p12``'s certificate names."""


@dataclass(frozen=True)
class Pki:
    """The files :func:`make_pki` wrote (absolute paths) and the one password of them all."""

    folder: Path
    password: str
    ca: Path
    server_p12: Path
    client_p12: Path
    client_pem: Path
    other_ca: Path
    elsewhere_p12: Path


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("the openssl command is needed to make test certificates")
    done = subprocess.run(
        [exe, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed ({done.returncode}): {done.stderr.strip()}")


def _key(name: str, cwd: Path) -> None:
    _openssl(
        "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name, cwd=cwd
    )


def _ca(stem: str, cwd: Path) -> None:
    _key(f"{stem}.key", cwd)
    _openssl(
        "req", "-x509", "-new", "-key", f"{stem}.key", "-sha256", "-days", _DAYS,
        "-subj", f"/CN=connectrt test {stem}", "-out", f"{stem}.pem",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=cwd,
    )  # fmt: skip


def _signed(stem: str, cn: str, extensions: str, cwd: Path) -> None:
    _key(f"{stem}.key", cwd)
    _openssl("req", "-new", "-key", f"{stem}.key", "-subj", f"/CN={cn}", "-out", f"{stem}.csr",
             cwd=cwd)  # fmt: skip
    (cwd / f"{stem}.ext").write_text(extensions, "utf-8")
    _openssl(
        "x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", _DAYS, "-sha256", "-extfile", f"{stem}.ext",
        "-out", f"{stem}.crt",
        cwd=cwd,
    )  # fmt: skip


def _pkcs12(stem: str, password: str, cwd: Path) -> None:
    _openssl(
        "pkcs12", "-export", "-inkey", f"{stem}.key", "-in", f"{stem}.crt", "-certfile", "ca.pem",
        "-name", stem, "-passout", f"pass:{password}", "-out", f"{stem}.p12",
        cwd=cwd,
    )  # fmt: skip


def make_pki(folder: Path, password: str = "store-secret") -> Pki:
    """Write the CA, server and client certificates and their stores into ``folder`` (created
    if missing); see the module docstring for the files."""
    folder.mkdir(parents=True, exist_ok=True)
    _ca("ca", folder)
    _ca("other-ca", folder)
    _signed(
        "server",
        "localhost",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        folder,
    )
    _signed("client", "connectrt-client", "extendedKeyUsage=clientAuth\n", folder)
    _signed(
        "elsewhere",
        ELSEWHERE,
        f"subjectAltName=DNS:{ELSEWHERE}\nextendedKeyUsage=serverAuth\n",
        folder,
    )
    _pkcs12("server", password, folder)
    _pkcs12("elsewhere", password, folder)
    _pkcs12("client", password, folder)
    _openssl(
        "pkcs8", "-topk8", "-in", "client.key", "-v2", "aes-256-cbc",
        "-passout", f"pass:{password}", "-out", "client-encrypted.key",
        cwd=folder,
    )  # fmt: skip
    pem = folder / "client-keystore.pem"
    pem.write_text(
        "".join(
            (folder / name).read_text("utf-8")
            for name in ("client-encrypted.key", "client.crt", "ca.pem")
        ),
        "utf-8",
    )
    return Pki(
        folder=folder.resolve(),
        password=password,
        ca=(folder / "ca.pem").resolve(),
        server_p12=(folder / "server.p12").resolve(),
        client_p12=(folder / "client.p12").resolve(),
        client_pem=pem.resolve(),
        other_ca=(folder / "other-ca.pem").resolve(),
        elsewhere_p12=(folder / "elsewhere.p12").resolve(),
    )
