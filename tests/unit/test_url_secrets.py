"""Secrets embedded in URL-like config values are masked and listed for the log redactor."""

from __future__ import annotations

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.secrets.masking import HIDDEN, SecretMasker
from connectrt.runtime.secrets.url_secrets import looks_like_url, mask_url_secrets, url_secrets


@pytest.mark.parametrize(
    ("value", "masked", "secrets"),
    [
        (
            "jdbc:postgresql://user:s3cr3t@db:5432/app",
            "jdbc:postgresql://user:[hidden]@db:5432/app",
            ["s3cr3t"],
        ),
        (
            "jdbc:postgresql://db/app?user=u&password=s3cr3t&ssl=true",
            "jdbc:postgresql://db/app?user=u&password=[hidden]&ssl=true",
            ["s3cr3t"],
        ),
        (
            "jdbc:sqlserver://db:1433;databaseName=x;user=u;Password=s3cr3t;encrypt=true",
            "jdbc:sqlserver://db:1433;databaseName=x;user=u;Password=[hidden];encrypt=true",
            ["s3cr3t"],
        ),
        ("http://u:p@ss@registry:8081/x@y", "http://u:[hidden]@registry:8081/x@y", ["p@ss"]),
        ("https://api/x?token=abcd&page=2", "https://api/x?token=[hidden]&page=2", ["abcd"]),
        (
            "mongodb://u:pw@h1,h2/?authSource=admin",
            "mongodb://u:[hidden]@h1,h2/?authSource=admin",
            ["pw"],
        ),
    ],
)
def test_embedded_secrets_are_masked_and_listed(
    value: str, masked: str, secrets: list[str]
) -> None:
    assert looks_like_url(value)
    assert mask_url_secrets(value) == masked
    assert url_secrets(value) == secrets
    assert url_secrets(masked) == []  # masking is idempotent


@pytest.mark.parametrize(
    "value",
    [
        "sqlite:///var/data/app.db",
        "http://registry:8081",
        "jdbc:postgresql://db:5432/app?user=u",
        "localhost:9092",
        "user:password-looking-text",
        "${file:/etc/secrets.properties:db.url}",
        "a plain value with password=x in it",
    ],
)
def test_values_without_embedded_secrets_are_untouched(value: str) -> None:
    assert mask_url_secrets(value) == value
    assert url_secrets(value) == []


def test_mask_hides_url_passwords_in_innocent_keys_and_merge_restores_them() -> None:
    masker = SecretMasker()
    stored = {
        "connection.url": "jdbc:postgresql://user:s3cr3t@db/app",
        "connection.password": "other",
        "topics": "orders",
    }
    shown = masker.mask(stored)
    assert shown == {
        "connection.url": "jdbc:postgresql://user:[hidden]@db/app",
        "connection.password": HIDDEN,
        "topics": "orders",
    }
    assert masker.embedded_secrets(stored) == ["s3cr3t"]
    # GET -> edit -> PUT: the masked URL sent back keeps the stored password.
    edited = {**shown, "topics": "orders,returns"}
    assert masker.merge_hidden(edited, stored) == {**stored, "topics": "orders,returns"}
    # A changed URL that still says [hidden] is refused: it would become the password.
    moved = {**shown, "connection.url": "jdbc:postgresql://user:[hidden]@db2/app"}
    with pytest.raises(ConfigError, match=r"connection\.url"):
        masker.merge_hidden(moved, stored)
    # A new URL with real credentials is taken as sent.
    fresh = {**shown, "connection.url": "jdbc:postgresql://user:n3w@db2/app"}
    assert masker.merge_hidden(fresh, stored)["connection.url"] == fresh["connection.url"]
