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
        """The schema text registered under ``schema_id``."""
        try:
            body = self._call("GET", f"/schemas/ids/{schema_id}")
        except RegistryError as exc:
            if exc.status == 404:
                raise DataError(f"Schema id {schema_id} not found in the registry") from exc
            raise DataError(f"Error retrieving Avro schema id {schema_id}: {exc}") from exc
        if body.get("schemaType", "AVRO") != "AVRO":
            raise DataError(f"Schema id {schema_id} is a {body['schemaType']} schema, not AVRO")
        return str(body["schema"])

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
            raise DataError(f"Error retrieving schema id {schema_id}: {exc}") from exc
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
