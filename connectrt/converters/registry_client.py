"""A minimal client of a Confluent-compatible schema registry (httpx, synchronous), shared by
the Avro, JSON Schema and Protobuf converters.

Thread-safety: one client per converter, used from that converter's task thread.
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import quote

import httpx

from connectrt.errors import DataError

__all__ = ["CONTENT_TYPE", "RegistryError", "SchemaRegistryClient"]

CONTENT_TYPE: Final = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryClient:
    """A minimal Confluent schema registry client (httpx, synchronous)."""

    def __init__(
        self,
        url: str,
        auth: tuple[str, str] | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.requests = 0
        """Number of HTTP requests made (for tests and metrics)."""
        self._http = httpx.Client(
            base_url=self.url,
            auth=auth,
            timeout=timeout,
            headers={"Accept": f"{CONTENT_TYPE}, application/json"},
            transport=transport,
        )

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        self.requests += 1
        try:
            if body is None:
                resp = self._http.request(method, path)
            else:
                resp = self._http.request(
                    method,
                    path,
                    content=json.dumps(body).encode(),
                    headers={"Content-Type": CONTENT_TYPE},
                )
        except httpx.HTTPError as exc:
            raise DataError(f"Schema registry {self.url} unreachable: {exc}") from exc
        if resp.status_code >= 400:
            try:
                err = resp.json()
                message = f"{err.get('message', resp.text)} (error code {err.get('error_code')})"
            except ValueError:
                message = resp.text
            raise RegistryError(resp.status_code, f"{method} {path}: {message}")
        try:
            return resp.json()
        except ValueError as exc:
            raise DataError(f"Schema registry returned invalid JSON for {path}") from exc

    def get_schema(self, schema_id: int) -> str:
        """The text of the Avro schema registered under ``schema_id``."""
        return str(self.get_schema_info(schema_id, "AVRO")["schema"])

    def get_schema_info(self, schema_id: int, schema_type: str) -> dict[str, Any]:
        """``{"schema": text, "schemaType": ..., "references": [...]}`` of ``schema_id``,
        which must be a ``schema_type`` schema (``format=serialized`` for Protobuf: a
        base64 ``FileDescriptorProto``)."""
        query = "?format=serialized" if schema_type == "PROTOBUF" else ""
        try:
            body = self._call("GET", f"/schemas/ids/{schema_id}{query}")
        except RegistryError as exc:
            if exc.status == 404:
                raise DataError(f"Schema id {schema_id} not found in the registry") from exc
            kind = _kind(schema_type)
            raise DataError(f"Error retrieving {kind} schema id {schema_id}: {exc}") from exc
        found = str(body.get("schemaType") or "AVRO")
        if found != schema_type:
            raise DataError(f"Schema id {schema_id} is a {found} schema, not {schema_type}")
        return dict(body)

    def get_version(self, subject: str, version: int | str) -> dict[str, Any]:
        """``subject``'s ``version`` (``id``, ``schema``, ``schemaType``, ``references``)."""
        path = f"/subjects/{_q(subject)}/versions/{version}"
        return self._answer("GET", path, None, f"No version {version} of subject {subject}")

    def register(
        self,
        subject: str,
        schema: str,
        schema_type: str = "AVRO",
        references: list[dict[str, Any]] | None = None,
    ) -> int:
        """Register ``schema`` under ``subject`` (idempotent); its id."""
        failure = f"Error registering {_kind(schema_type)} schema for subject {subject}"
        request = _schema_body(schema, schema_type, references)
        return self._schema_id(f"/subjects/{_q(subject)}/versions", request, failure)

    def lookup(
        self,
        subject: str,
        schema: str,
        schema_type: str = "AVRO",
        references: list[dict[str, Any]] | None = None,
    ) -> int:
        """The id of ``schema`` already registered under ``subject``."""
        failure = f"Schema not registered under subject {subject} (auto.register.schemas=false)"
        request = _schema_body(schema, schema_type, references)
        return self._schema_id(f"/subjects/{_q(subject)}", request, failure)

    def latest(self, subject: str) -> tuple[int, str]:
        """``(id, schema text)`` of the latest version under ``subject``."""
        path = f"/subjects/{_q(subject)}/versions/latest"
        body = self._answer("GET", path, None, f"No latest schema for subject {subject}")
        return int(body["id"]), str(body["schema"])

    def compatibility(
        self,
        subject: str,
        schema: str,
        schema_type: str = "AVRO",
        references: list[dict[str, Any]] | None = None,
    ) -> list[str] | None:
        """None when ``schema`` may be registered under ``subject`` (the check registration
        makes, under the subject's compatibility level; a subject without versions accepts
        anything), else the registry's verbose reasons it may not."""
        request = _schema_body(schema, schema_type, references)
        body: dict[str, Any] | None = None
        # Every version the level checks; a registry without that endpoint (before Confluent
        # 7) is asked about the latest version.
        for version in ("", "/latest"):
            path = f"/compatibility/subjects/{_q(subject)}/versions{version}?verbose=true"
            try:
                body = self._call("POST", path, request)
                break
            except RegistryError as exc:
                if exc.status == 404 and ("(error code 4040" in str(exc) or version):
                    return None  # no such subject (40401) or version (40402): nothing to break
                if exc.status not in (404, 405):
                    raise DataError(
                        f"Compatibility check for subject {subject} failed: {exc}"
                    ) from exc
        if body is None:
            return None
        if body.get("is_compatible", False):
            return None
        return [str(m) for m in body.get("messages") or ()]

    def compatibility_level(self, subject: str) -> str:
        """``subject``'s compatibility level (the global one when it has none)."""
        path = f"/config/{_q(subject)}?defaultToGlobal=true"
        try:
            body = self._call("GET", path)
        except RegistryError:
            try:
                body = self._call("GET", "/config")
            except RegistryError:
                return "unknown"
        return str(body.get("compatibilityLevel") or body.get("compatibility") or "unknown")

    def _schema_id(self, path: str, request: dict[str, Any], failure: str) -> int:
        """The ``id`` the registry answers a schema POSTed to ``path`` with."""
        return int(self._answer("POST", path, request, failure)["id"])

    def _answer(
        self, method: str, path: str, request: dict[str, Any] | None, failure: str
    ) -> dict[str, Any]:
        """The body of the registry's answer; a DataError ``"{failure}: {error}"`` when the
        registry (or the way to it) fails."""
        try:
            return dict(self._call(method, path, request))
        except RegistryError as exc:
            raise DataError(f"{failure}: {exc}") from exc

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()


class RegistryError(DataError):
    """An HTTP error answer from the schema registry."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def _q(subject: str) -> str:
    return quote(subject, safe="")


def _kind(schema_type: str) -> str:
    return {"AVRO": "Avro", "JSON": "JSON"}.get(schema_type, schema_type.capitalize())


def _schema_body(
    schema: str, schema_type: str, references: list[dict[str, Any]] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": schema}
    if schema_type != "AVRO":
        body["schemaType"] = schema_type
    if references:
        body["references"] = references
    return body
