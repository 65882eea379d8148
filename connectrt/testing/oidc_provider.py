"""A small OpenID Connect token endpoint for tests: the client-credentials grant, signed JWTs.

:class:`OidcProvider` serves, on ``127.0.0.1`` and a free port, over plain HTTP:

* ``POST /token`` (:attr:`OidcProvider.token_url`): the OAuth 2 client-credentials grant
  (``grant_type=client_credentials``; the client's id and secret by HTTP Basic authentication or
  as form fields). A known client gets ``{"access_token": JWT, "token_type": "bearer",
  "expires_in": ...}``; an unknown one, or a wrong secret, a 401 ``invalid_client``.
* ``GET /jwks`` (:attr:`OidcProvider.jwks_url`): the public key set that verifies the tokens.

Tokens are RS256 JWTs with the claims ``sub`` (the client id), ``iss``, ``aud``, ``iat``,
``exp`` and ``scope`` (the requested scope), signed by a 2048-bit RSA key made at
construction, with a ``kid`` the key set names: what Kafka's
``OAuthBearerValidatorCallbackHandler`` (with ``sasl.oauthbearer.jwks.endpoint.url``) verifies.

Lifecycle: ``start()`` serves from a daemon thread; ``stop()`` (idempotent) shuts the server
down; also a context manager. :attr:`issued` counts the tokens issued (read from any thread).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from joserfc import jwt
from joserfc.jwk import RSAKey

from connectrt.service import ManagedService

__all__ = ["OidcProvider"]

_KID = "connectrt-test-key"


class OidcProvider(ManagedService):
    """Issues JWTs to the ``clients`` (id -> secret) by the client-credentials grant."""

    def __init__(
        self,
        clients: Mapping[str, str],
        *,
        audience: str = "kafka",
        lifetime_s: int = 3600,
    ) -> None:
        self._clients = dict(clients)
        self.audience = audience
        self._lifetime_s = lifetime_s
        self._key = RSAKey.generate_key(2048, parameters={"kid": _KID, "use": "sig"})
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._issued = 0

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("OidcProvider has not been started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def issued(self) -> int:
        with self._lock:
            return self._issued

    def start(self) -> OidcProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: tests read failures from the clients

            def do_GET(self) -> None:
                if self.path != "/jwks":
                    self._reply(404, {"error": "not_found"})
                    return
                self._reply(200, {"keys": [provider._key.as_dict(private=False)]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode("utf-8"))
                status, body = provider._token(self.path, self.headers.get("Authorization"), form)
                self._reply(status, body)

            def _reply(self, status: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="oidc-provider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(10)

    # -- the grant ---------------------------------------------------------------------------

    def _token(
        self, path: str, authorization: str | None, form: Mapping[str, list[str]]
    ) -> tuple[int, dict[str, Any]]:
        if path != "/token":
            return 404, {"error": "not_found"}
        if form.get("grant_type", [""])[0] != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        client_id, secret = _credentials(authorization, form)
        if client_id is None or self._clients.get(client_id) != secret:
            return 401, {"error": "invalid_client"}
        now = int(time.time())
        claims = {
            "sub": client_id,
            "iss": self.issuer,
            "aud": self.audience,
            "iat": now,
            "exp": now + self._lifetime_s,
            "scope": form.get("scope", [""])[0],
        }
        token = jwt.encode({"alg": "RS256", "kid": _KID, "typ": "JWT"}, claims, self._key)
        with self._lock:
            self._issued += 1
        return 200, {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": self._lifetime_s,
        }


def _credentials(
    authorization: str | None, form: Mapping[str, list[str]]
) -> tuple[str | None, str | None]:
    if authorization and authorization.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(authorization[6:].strip()).decode("utf-8")
        except ValueError:
            return None, None
        client_id, _, secret = decoded.partition(":")
        return client_id, secret
    ids, secrets = form.get("client_id"), form.get("client_secret")
    return (ids[0] if ids else None), (secrets[0] if secrets else None)
