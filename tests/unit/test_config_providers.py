"""Config providers (KIP-297): built-ins, worker-config wiring, resolution and unresolution."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.secrets.providers import (
    ConfigData,
    ConfigProvider,
    ConfigProviders,
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
    config_provider_class,
    has_references,
    is_single_reference,
    unresolve_task_configs,
)

KAFKA = "org.apache.kafka.common.config.provider."


class RecordingProvider(ConfigProvider):
    """A test provider: fixed data per path, optional TTL per path, records every call."""

    def __init__(
        self,
        data: Mapping[str, Mapping[str, str]] | None = None,
        ttls: Mapping[str, int] | None = None,
    ) -> None:
        self.data = {p: dict(v) for p, v in (data or {}).items()}
        self.ttls = dict(ttls or {})
        self.calls: list[tuple[str, set[str] | None]] = []
        self.params: dict[str, str] | None = None
        self.closed = False

    def configure(self, params: Mapping[str, str]) -> None:
        self.params = dict(params)

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        self.calls.append((path, None if keys is None else set(keys)))
        values = self.data.get(path, {})
        if keys is not None:
            values = {k: v for k, v in values.items() if k in keys}
        return ConfigData(values, self.ttls.get(path))

    def close(self) -> None:
        self.closed = True


class TrackingProvider(RecordingProvider):
    closed_count = 0

    def close(self) -> None:
        TrackingProvider.closed_count += 1


class FailingConfigureProvider(ConfigProvider):
    def configure(self, params: Mapping[str, str]) -> None:
        raise ConfigError("bad params")

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:  # pragma: no cover
        return ConfigData({})


# --- FileConfigProvider ---------------------------------------------------------------------


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    d = tmp_path / "secrets"
    d.mkdir()
    (d / "db.properties").write_text(
        "# credentials\ndb.user=alice\ndb.password = s3cr=t!\nurl: jdbc:x\n", encoding="utf-8"
    )
    return d


def test_file_provider_reads_requested_property_keys(secrets_dir: Path) -> None:
    p = FileConfigProvider()
    p.configure({})
    data = p.get(str(secrets_dir / "db.properties"), {"db.password", "missing"})
    assert data.data == {"db.password": "s3cr=t!"}
    assert data.ttl_ms is None


def test_file_provider_all_keys_when_keys_none(secrets_dir: Path) -> None:
    p = FileConfigProvider()
    data = p.get(str(secrets_dir / "db.properties"), None)
    assert data.data == {"db.user": "alice", "db.password": "s3cr=t!", "url": "jdbc:x"}


def test_file_provider_empty_path_gives_no_data() -> None:
    assert FileConfigProvider().get("", {"x"}).data == {}


def test_file_provider_missing_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Could not read properties from file"):
        FileConfigProvider().get(str(tmp_path / "nope.properties"), {"a"})


def test_file_provider_allowed_paths_admits_inside(tmp_path: Path, secrets_dir: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    p = FileConfigProvider()
    p.configure({"allowed.paths": f" {tmp_path / 'elsewhere'} , {secrets_dir} ,"})
    assert p.get(str(secrets_dir / "db.properties"), {"db.user"}).data == {"db.user": "alice"}


def test_file_provider_allowed_paths_refuses_outside(
    tmp_path: Path, secrets_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "other.properties"
    outside.write_text("db.password=leak\n", encoding="utf-8")
    p = FileConfigProvider()
    p.configure({"allowed.paths": str(secrets_dir)})
    with caplog.at_level(logging.WARNING, logger="connectrt.runtime.secrets.builtin_providers"):
        assert p.get(str(outside), {"db.password"}).data == {}
    assert "not allowed" in caplog.text
    # ".." cannot climb out of an allowed directory either
    sneaky = str(secrets_dir / ".." / "other.properties")
    assert p.get(sneaky, {"db.password"}).data == {}


def test_file_provider_allowed_paths_is_per_component(tmp_path: Path) -> None:
    (tmp_path / "kc").mkdir()
    (tmp_path / "kc2").mkdir()
    (tmp_path / "kc2" / "a.properties").write_text("k=v\n", encoding="utf-8")
    p = FileConfigProvider()
    p.configure({"allowed.paths": str(tmp_path / "kc")})
    assert p.get(str(tmp_path / "kc2" / "a.properties"), {"k"}).data == {}


def test_file_provider_symlink_out_of_allowed_paths_is_refused(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    target = tmp_path / "outside.properties"
    target.write_text("k=v\n", encoding="utf-8")
    (allowed / "link.properties").symlink_to(target)
    p = FileConfigProvider()
    p.configure({"allowed.paths": str(allowed)})
    assert p.get(str(allowed / "link.properties"), {"k"}).data == {}


def test_allowed_paths_must_be_absolute_and_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not absolute") as e:
        FileConfigProvider().configure({"allowed.paths": "relative/dir"})
    assert e.value.name == "allowed.paths"
    with pytest.raises(ConfigError, match="does not exist"):
        DirectoryConfigProvider().configure({"allowed.paths": str(tmp_path / "missing")})


# --- DirectoryConfigProvider ----------------------------------------------------------------


def test_directory_provider_file_contents_are_values(tmp_path: Path) -> None:
    (tmp_path / "username").write_text("alice", encoding="utf-8")
    (tmp_path / "password").write_text("line1\nline2\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested").write_text("x", encoding="utf-8")
    p = DirectoryConfigProvider()
    p.configure({})
    assert p.get(str(tmp_path), {"password", "sub", "nope"}).data == {"password": "line1\nline2\n"}
    assert p.get(str(tmp_path), None).data == {"username": "alice", "password": "line1\nline2\n"}


def test_directory_provider_key_cannot_traverse(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "outside").write_text("leak", encoding="utf-8")
    assert DirectoryConfigProvider().get(str(d), {"../outside"}).data == {}


def test_directory_provider_not_a_directory_gives_no_data(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x", encoding="utf-8")
    assert DirectoryConfigProvider().get(str(f), {"file"}).data == {}
    assert DirectoryConfigProvider().get("", None).data == {}


def test_directory_provider_allowed_paths(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    other = tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (allowed / "pw").write_text("inside", encoding="utf-8")
    (other / "pw").write_text("outside", encoding="utf-8")
    (allowed / "link").symlink_to(other / "pw")
    p = DirectoryConfigProvider()
    p.configure({"allowed.paths": str(allowed)})
    assert p.get(str(allowed), None).data == {"pw": "inside"}  # symlinked file skipped
    assert p.get(str(other), {"pw"}).data == {}


# --- EnvVarConfigProvider -------------------------------------------------------------------


def test_env_provider_reads_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRT_TEST_PW", "hunter22")
    monkeypatch.delenv("CRT_TEST_ABSENT", raising=False)
    p = EnvVarConfigProvider()
    p.configure({})
    assert p.get("", {"CRT_TEST_PW", "CRT_TEST_ABSENT"}).data == {"CRT_TEST_PW": "hunter22"}
    assert p.get("", None).data["CRT_TEST_PW"] == "hunter22"


def test_env_provider_rejects_a_path() -> None:
    with pytest.raises(ConfigError) as e:
        EnvVarConfigProvider().get("/some/path", {"X"})
    assert str(e.value) == (
        "Path is not supported for EnvVarConfigProvider, invalid value '/some/path'"
    )


def test_env_provider_allowlist_pattern_is_a_full_match(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRT_OK_1", "yes")
    monkeypatch.setenv("XCRT_OK_1", "no")
    p = EnvVarConfigProvider()
    p.configure({"allowlist.pattern": "CRT_OK_.*"})
    assert p.get("", {"CRT_OK_1", "XCRT_OK_1"}).data == {"CRT_OK_1": "yes"}
    assert set(p.get("", None).data) <= {k for k in os.environ if k.startswith("CRT_OK_")}


def test_env_provider_invalid_allowlist_pattern() -> None:
    with pytest.raises(ConfigError, match="Invalid regular expression"):
        EnvVarConfigProvider().configure({"allowlist.pattern": "("})


# --- ConfigProviders.from_worker_config -----------------------------------------------------


def test_from_worker_config_builds_named_providers(tmp_path: Path) -> None:
    providers = ConfigProviders.from_worker_config(
        {
            "config.providers": " file , dir,env,test",
            "config.providers.file.class": KAFKA + "FileConfigProvider",
            "config.providers.file.param.allowed.paths": str(tmp_path),
            "config.providers.dir.class": "DirectoryConfigProvider",
            "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
            "config.providers.test.class": f"{__name__}:RecordingProvider",
            "config.providers.test.param.a.b": "c",
            "config.providers.other.class": "ignored.because.NotListed",
        }
    )
    assert providers.names == ["file", "dir", "env", "test"]
    assert isinstance(providers.get("file"), FileConfigProvider)
    assert isinstance(providers.get("dir"), DirectoryConfigProvider)
    assert isinstance(providers.get("env"), EnvVarConfigProvider)
    test = providers.get("test")
    assert isinstance(test, RecordingProvider)
    assert test.params == {"a.b": "c"}
    assert "other" not in providers
    providers.close()
    assert test.closed


def test_from_worker_config_without_providers_is_empty() -> None:
    assert ConfigProviders.from_worker_config({}).names == []
    assert ConfigProviders.from_worker_config({"config.providers": ""}).names == []


def test_from_worker_config_unknown_class_names_it() -> None:
    with pytest.raises(ConfigError, match=r"com\.example\.VaultConfigProvider"):
        ConfigProviders.from_worker_config(
            {
                "config.providers": "vault",
                "config.providers.vault.class": "com.example.VaultConfigProvider",
            }
        )


def test_from_worker_config_missing_class_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"config\.providers\.vault\.class") as e:
        ConfigProviders.from_worker_config({"config.providers": "vault"})
    assert e.value.name == "config.providers.vault.class"


def test_from_worker_config_class_that_is_not_a_provider() -> None:
    with pytest.raises(ConfigError, match="is not a ConfigProvider"):
        config_provider_class("pathlib.Path")


def test_from_worker_config_closes_configured_providers_on_failure() -> None:
    TrackingProvider.closed_count = 0
    with pytest.raises(ConfigError, match="bad params"):
        ConfigProviders.from_worker_config(
            {
                "config.providers": "ok,bad",
                "config.providers.ok.class": f"{__name__}.TrackingProvider",
                "config.providers.bad.class": f"{__name__}.FailingConfigureProvider",
            }
        )
    assert TrackingProvider.closed_count == 1


# --- references and resolution --------------------------------------------------------------


def test_has_references_and_single_reference() -> None:
    assert has_references("${env:X}")
    assert has_references("jdbc://u:${file:/p:pw}@h")
    assert not has_references("plain")
    assert not has_references("${novariable}")
    assert not has_references(None)
    assert is_single_reference("${file:/p:pw}")
    assert is_single_reference("${env:X}")
    assert not is_single_reference("${env:X}${env:Y}")
    assert not is_single_reference("x${env:X}")
    assert not is_single_reference("${env:X} ")


def test_resolve_replaces_path_and_pathless_references() -> None:
    test = RecordingProvider({"/p": {"pw": "secret1"}, "": {"USER": "bob"}})
    resolved = ConfigProviders({"test": test}).resolve(
        {"a": "${test:/p:pw}", "b": "${test:USER}", "c": "plain", "d": ""}
    )
    assert resolved.config == {"a": "secret1", "b": "bob", "c": "plain", "d": ""}
    assert resolved.ttl_ms is None
    assert resolved.substituted_values == frozenset({"secret1", "bob"})


def test_resolve_unknown_provider_and_unknown_key_left_unchanged() -> None:
    test = RecordingProvider({"/p": {"pw": "secret1"}})
    config = {
        "unknown.provider": "${vault:/p:pw}",
        "unknown.key": "${test:/p:nope}",
        "unknown.path": "${test:/q:pw}",
        "mixed": "${test:/p:nope}-${test:/p:pw}-${vault:x}",
    }
    resolved = ConfigProviders({"test": test}).resolve(config)
    assert resolved.config == {
        "unknown.provider": "${vault:/p:pw}",
        "unknown.key": "${test:/p:nope}",
        "unknown.path": "${test:/q:pw}",
        "mixed": "${test:/p:nope}-secret1-${vault:x}",
    }


def test_resolve_several_references_in_one_value_and_batches_per_path() -> None:
    test = RecordingProvider({"/db": {"user": "alice", "pw": "pa55word"}, "/x": {"k": "v"}})
    resolved = ConfigProviders({"test": test}).resolve(
        {
            "connection.url": "postgresql://${test:/db:user}:${test:/db:pw}@h/db",
            "connection.password": "${test:/db:pw}",
            "other": "${test:/x:k}",
        }
    )
    assert resolved.config["connection.url"] == "postgresql://alice:pa55word@h/db"
    assert resolved.config["connection.password"] == "pa55word"
    assert resolved.config["other"] == "v"
    assert sorted(test.calls, key=lambda c: c[0]) == [("/db", {"user", "pw"}), ("/x", {"k"})]


def test_resolve_is_not_recursive() -> None:
    test = RecordingProvider({"": {"a": "${test:b}", "b": "deep"}})
    assert ConfigProviders({"test": test}).resolve({"k": "${test:a}"}).config == {"k": "${test:b}"}


def test_resolve_ttl_is_the_minimum() -> None:
    short = RecordingProvider({"/a": {"k": "1"}, "/b": {"k": "2"}}, ttls={"/a": 5000, "/b": 900})
    other = RecordingProvider({"/c": {"k": "3"}}, ttls={"/c": 3000})
    resolved = ConfigProviders({"s": short, "o": other}).resolve(
        {"x": "${s:/a:k}", "y": "${s:/b:k}", "z": "${o:/c:k}"}
    )
    assert resolved.config == {"x": "1", "y": "2", "z": "3"}
    assert resolved.ttl_ms == 900
    assert resolved.ttls == {"/a": 5000, "/b": 900, "/c": 3000}


def test_resolve_ignores_negative_ttl() -> None:
    p = RecordingProvider({"/a": {"k": "1"}}, ttls={"/a": -1})
    assert ConfigProviders({"p": p}).resolve({"x": "${p:/a:k}"}).ttl_ms is None


def test_resolve_with_builtin_providers_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "db.properties").write_text("db.password=fromfile\n", encoding="utf-8")
    (tmp_path / "token").write_text("fromdir", encoding="utf-8")
    monkeypatch.setenv("CRT_TEST_USER", "fromenv")
    providers = ConfigProviders.from_worker_config(
        {
            "config.providers": "file,dir,env",
            "config.providers.file.class": KAFKA + "FileConfigProvider",
            "config.providers.file.param.allowed.paths": str(tmp_path),
            "config.providers.dir.class": KAFKA + "DirectoryConfigProvider",
            "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
        }
    )
    raw = {
        "connection.password": f"${{file:{tmp_path}/db.properties:db.password}}",
        "api.token": f"${{dir:{tmp_path}:token}}",
        "connection.user": "${env:CRT_TEST_USER}",
        "outside": "${file:/etc/hostname:x}",
    }
    resolved = providers.resolve(raw)
    assert resolved.config == {
        "connection.password": "fromfile",
        "api.token": "fromdir",
        "connection.user": "fromenv",
        "outside": "${file:/etc/hostname:x}",
    }
    assert raw["connection.password"].startswith("${file:")  # input untouched


def test_resolve_env_with_path_raises() -> None:
    providers = ConfigProviders({"env": EnvVarConfigProvider()})
    with pytest.raises(ConfigError, match="invalid value '/p'"):
        providers.resolve({"k": "${env:/p:X}"})


def test_resolve_wraps_unexpected_provider_errors() -> None:
    class Broken(ConfigProvider):
        def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
            raise RuntimeError("boom")

    with pytest.raises(ConfigError, match="Config provider 'b' failed to read path '/p'"):
        ConfigProviders({"b": Broken()}).resolve({"k": "${b:/p:x}"})


# --- unresolve_task_configs -----------------------------------------------------------------


def test_unresolve_puts_references_back_when_task_copied_the_value() -> None:
    raw = {
        "connection.password": "${file:/s.properties:pw}",
        "connection.url": "jdbc:pg://h/db?user=${env:U}",
        "topic": "t",
    }
    resolved = {
        "connection.password": "hunter22",
        "connection.url": "jdbc:pg://h/db?user=bob",
        "topic": "t",
    }
    tasks = [
        {"connection.password": "hunter22", "connection.url": "jdbc:pg://h/db?user=bob", "t": "0"},
        {"connection.password": "derived", "topic": "t", "task.extra": "1"},
    ]
    out = unresolve_task_configs(raw, tasks, resolved=resolved)
    assert out == [
        {
            "connection.password": "${file:/s.properties:pw}",
            "connection.url": "jdbc:pg://h/db?user=${env:U}",
            "t": "0",
        },
        # the connector computed its own value: kept; keys without references untouched
        {"connection.password": "derived", "topic": "t", "task.extra": "1"},
    ]
    assert tasks[0]["connection.password"] == "hunter22"  # inputs not modified


def test_unresolve_without_resolved_follows_kafka_reverse_transform() -> None:
    raw = {"pw": "${env:PW}", "plain": "x"}
    out = unresolve_task_configs(raw, [{"pw": "anything", "plain": "y"}, {"other": "1"}])
    assert out == [{"pw": "${env:PW}", "plain": "y"}, {"other": "1"}]
