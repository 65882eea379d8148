"""The console's schema pages: a schema registry's subjects, a subject's versions, and the
difference between two versions (``/ui/schemas``, ``/ui/schemas/{subject}?from=&to=``).

The registry is the worker's built-in one when ``schema.registry.enable=true`` (the process
that serves both hands its URL over as ``herder.schema_registry_url``), else the one the
worker's converters name (``value.converter.schema.registry.url``, then the key converter's):
any Confluent-compatible registry. The pages read it over HTTP from the server: the built-in
registry with the browser's ``Authorization`` header (it sits behind the same listener
security as the console), another registry with the converter's own basic auth settings
(``basic.auth.credentials.source=USER_INFO``), never with the console's credentials. Nothing
here changes anything: the only POST is the registry's compatibility check of one version
against another.

A difference shows the top-level fields added, removed or changed
(:func:`connectrt.converters.schema_drift.field_changes`), the registry's verdict on the newer
version against the older one under the subject's compatibility level (its verbose
messages), and a line diff of the two schemas as text. Routes run in the REST app's thread
pool; each request makes its own HTTP client.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from connectrt.converters.schema_drift import FieldChange, field_changes, schema_fields
from connectrt.runtime.herder.herder import Herder

__all__ = ["SchemaDiff", "SubjectVersion", "add_schema_routes", "registry_url"]

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"


@dataclass(frozen=True)
class _Source:
    url: str
    built_in: bool
    auth: tuple[str, str] | None = None  # an external registry's basic auth


def _source(herder: Herder) -> _Source | None:
    built_in: Callable[[], str] | None = getattr(herder, "schema_registry_url", None)
    if built_in is not None:
        try:
            return _Source(built_in(), True)
        except Exception:  # not listening (yet)
            return None
    originals = herder.config.originals
    for kind in ("value", "key"):
        urls = originals.get(f"{kind}.converter.schema.registry.url")
        if not urls:
            continue
        auth = None
        source = str(originals.get(f"{kind}.converter.basic.auth.credentials.source") or "")
        info = str(originals.get(f"{kind}.converter.basic.auth.user.info") or "")
        if source.upper() == "USER_INFO" and ":" in info and not info.startswith("${"):
            user, _, password = info.partition(":")
            auth = (user, password)
        return _Source(str(urls).split(",")[0].strip(), False, auth)
    return None


def registry_url(herder: Herder) -> str | None:
    """The registry the schema pages read (see the module docstring); None without one."""
    source = _source(herder)
    return None if source is None else source.url


@dataclass(frozen=True)
class SubjectVersion:
    """One version of a subject as the pages show it."""

    version: int
    id: int
    schema_type: str
    text: str  # pretty-printed (JSON indented; .proto as registered)

    @property
    def fields(self) -> dict[str, str]:
        return schema_fields(self.schema_type, self.text)


@dataclass(frozen=True)
class SchemaDiff:
    """The difference from version ``old`` to version ``new`` of a subject."""

    old: SubjectVersion
    new: SubjectVersion
    changes: list[FieldChange]
    lines: list[tuple[str, str]]  # (kind: add|del|ctx|hunk, text) of a unified diff
    compatible: bool | None  # the registry's verdict on new against old; None: unknown
    messages: list[str]


class _Registry:
    """Reads one registry for one request."""

    def __init__(self, source: _Source, authorization: str | None) -> None:
        headers = {"Accept": _ACCEPT}
        if authorization and source.built_in:
            headers["Authorization"] = authorization
        self.http = httpx.Client(
            base_url=source.url.rstrip("/"), headers=headers, auth=source.auth, timeout=15
        )

    def get(self, path: str) -> Any:
        answer = self.http.get(path)
        answer.raise_for_status()
        return answer.json()

    def subjects(self) -> list[str]:
        return sorted(str(s) for s in self.get("/subjects"))

    def level(self, subject: str) -> str:
        try:
            body = self.get(f"/config/{quote(subject, safe='')}?defaultToGlobal=true")
        except httpx.HTTPError:
            return "unknown"
        return str(body.get("compatibilityLevel") or "unknown")

    def versions(self, subject: str) -> list[SubjectVersion]:
        out = []
        for number in self.get(f"/subjects/{quote(subject, safe='')}/versions"):
            body = self.get(f"/subjects/{quote(subject, safe='')}/versions/{int(number)}")
            kind = str(body.get("schemaType") or "AVRO")
            out.append(SubjectVersion(int(number), int(body["id"]), kind, _pretty(body, kind)))
        return out

    def verdict(
        self, subject: str, old: SubjectVersion, new: SubjectVersion
    ) -> tuple[bool | None, list[str]]:
        request: dict[str, Any] = {"schema": new.text}
        if new.schema_type != "AVRO":
            request["schemaType"] = new.schema_type
        path = f"/compatibility/subjects/{quote(subject, safe='')}/versions/{old.version}"
        try:
            answer = self.http.post(f"{path}?verbose=true", json=request)
            answer.raise_for_status()
            body = answer.json()
        except (httpx.HTTPError, ValueError):
            return None, []
        return bool(body.get("is_compatible")), [str(m) for m in body.get("messages") or ()]

    def close(self) -> None:
        self.http.close()


def _pretty(body: dict[str, Any], schema_type: str) -> str:
    text = str(body.get("schema") or "")
    if schema_type == "PROTOBUF":
        return text
    try:
        return json.dumps(json.loads(text), indent=2)
    except ValueError:
        return text


def schema_diff(
    registry: _Registry, subject: str, old: SubjectVersion, new: SubjectVersion
) -> SchemaDiff:
    lines: list[tuple[str, str]] = []
    for line in difflib.unified_diff(
        old.text.splitlines(),
        new.text.splitlines(),
        f"version {old.version}",
        f"version {new.version}",
        n=3,
        lineterm="",
    ):
        if line.startswith(("---", "+++")):
            continue
        kind = {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "ctx")
        lines.append((kind, line))
    compatible, messages = registry.verdict(subject, old, new)
    return SchemaDiff(old, new, field_changes(old.fields, new.fields), lines, compatible, messages)


def _pick(versions: list[SubjectVersion], wanted: str | None, default: int) -> SubjectVersion:
    by_number = {v.version: v for v in versions}
    try:
        return by_number[int(wanted)] if wanted else versions[default]
    except (KeyError, ValueError):
        return versions[default]


def add_schema_routes(router: APIRouter, herder: Herder, page: Callable[..., Response]) -> None:
    """Add the schema pages to the console's ``router``; ``page(request, template, status,
    **context)`` renders a whole page."""

    def registry_for(request: Request) -> _Registry | None:
        source = _source(herder)
        if source is None:
            return None
        return _Registry(source, request.headers.get("authorization"))

    @router.get("/schemas", response_class=HTMLResponse)
    def subjects(request: Request) -> Response:
        registry = registry_for(request)
        if registry is None:
            return page(request, "schemas.html", 200, subjects=[], error=None, registry=None)
        try:
            names = registry.subjects()
            error = None
        except (httpx.HTTPError, ValueError) as exc:
            names, error = [], f"The schema registry did not answer: {exc}"
        finally:
            registry.close()
        return page(
            request, "schemas.html", 200, subjects=names, error=error, registry=registry_url(herder)
        )

    @router.get("/schemas/{subject}", response_class=HTMLResponse)
    def subject_page(request: Request, subject: str) -> Response:
        registry = registry_for(request)
        if registry is None:
            return page(request, "schemas.html", 404, subjects=[], error=None, registry=None)
        try:
            try:
                versions = registry.versions(subject)
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                error = f"No subject {subject} in the schema registry (HTTP {status})."
                return page(request, "subject.html", 404, subject=subject, error=error)
            except (httpx.HTTPError, ValueError) as exc:
                error = f"The schema registry did not answer: {exc}"
                return page(request, "subject.html", 502, subject=subject, error=error)
            diff = None
            if len(versions) > 1:
                old = _pick(versions, request.query_params.get("from"), -2)
                new = _pick(versions, request.query_params.get("to"), -1)
                diff = schema_diff(registry, subject, old, new)
            return page(
                request,
                "subject.html",
                200,
                subject=subject,
                error=None,
                level=registry.level(subject),
                versions=versions,
                diff=diff,
            )
        finally:
            registry.close()
