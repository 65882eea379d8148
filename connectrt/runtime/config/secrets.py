"""How the herder treats connector configs' secrets: resolved for the connector, masked for
every caller, and kept out of logs and traces.

:class:`ConfigSecrets` holds the worker's :class:`~connectrt.runtime.secrets.masking.SecretMasker`,
its config providers (optional) and its log redactor (optional), and answers:

* :meth:`resolve`: the values a connector and its tasks get (provider references replaced);
  every substituted value, every password embedded in a URL and the value of every
  secret-typed or secret-named key (:meth:`register_secrets`) is registered with the
  redactor first, so it never reaches a log line, a trace or an error message;
  :meth:`resolution` does the same and returns the secrets too (a :class:`Resolution`), so
  that a config resolved inside :meth:`transient` can be kept with :meth:`keep` once it is
  accepted, without asking the config providers again;
* :meth:`masked` / :meth:`mask_task_config`: what GET responses show (secret keys and URL
  passwords as ``[hidden]``, provider references as written);
* :meth:`merge_hidden`: an incoming config with ``[hidden]`` put back to the stored values;
* :meth:`redact`: text (a trace, an error message) without any registered secret (the
  process's :func:`~connectrt.runtime.redaction.redact` unless another redactor is given);
* :meth:`unresolve`: task configs with the provider references put back before storing.

Lifecycle: one per herder. Threading: every method may run on any thread; the definition
cache is filled idempotently (a race computes the same ConfigDef twice).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from connectrt.api.config import ConfigDef
from connectrt.runtime.config.connector import framework_def_for
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.redaction import process_redactor
from connectrt.runtime.secrets.providers import is_single_reference

__all__ = ["ConfigSecrets", "Resolution"]


@dataclass(frozen=True)
class Resolution:
    """A config resolved once: ``config`` holds the values handed to the connector, ``secrets``
    every value found secret on the way (registered with the redactor by whoever resolved it;
    :meth:`ConfigSecrets.keep` registers them for good)."""

    config: dict[str, str]
    secrets: tuple[str, ...]


class ConfigSecrets:
    """See the module docstring."""

    def __init__(
        self,
        registry: PluginRegistry,
        masker: Any,
        providers: Any = None,
        redactor: Any = None,
    ) -> None:
        self.registry = registry
        self.masker = masker
        self.providers = providers
        self.redactor = redactor if redactor is not None else process_redactor()
        self._definitions: dict[str, ConfigDef] = {}
        self._scope = threading.local()  # .held: values held by a transient() on this thread

    @contextmanager
    def transient(self) -> Iterator[None]:
        """Within this block, secrets this thread's :meth:`resolve` and :meth:`register_secrets`
        learn are hidden only until the block ends (:meth:`Redactor.hold`), not for good.

        For requests whose config is not kept: a validate call, and the validation of a create
        or update (a config that is stored is resolved again, for good, when the worker starts
        it). Without it any caller could grow the set of secrets the worker hides, and the cost
        of every redaction, with each request."""
        outer = getattr(self._scope, "held", None)
        held: list[str] = []
        self._scope.held = held
        try:
            yield
        finally:
            self._scope.held = outer
            self.redactor.release(held)

    def _register(self, values: Iterable[object]) -> None:
        held = getattr(self._scope, "held", None)
        if held is None:
            self.redactor.register_all(values)
        else:
            held += self.redactor.hold(values)

    def redact(self, text: str) -> str:
        """``text`` with every secret the worker has seen replaced by ``[hidden]``."""
        return self.redactor.redact(text)

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """Raw config -> values handed to connectors and tasks (config providers applied).

        Registers every secret of the config with the redactor before returning (see
        :meth:`register_secrets`)."""
        return self.resolution(config).config

    def resolution(self, config: Mapping[str, str]) -> Resolution:
        """:meth:`resolve`, returning the secrets it registered as well."""
        if self.providers is None:
            resolved = dict(config)
            substituted: Iterable[str] = ()
        else:
            result = self.providers.resolve(config)
            resolved, substituted = dict(result.config), result.substituted_values
        secrets = [*substituted, *self._secret_values(config, resolved, self.definition(config))]
        kept = tuple(v for v in secrets if v is not None)
        self._register(kept)  # never show them
        return Resolution(resolved, kept)

    def keep(self, resolution: Resolution) -> None:
        """Hide the secrets of ``resolution`` for good (it was made inside :meth:`transient`
        for a config that is now kept)."""
        self.redactor.register_all(resolution.secrets)

    def register_secrets(
        self,
        config: Mapping[str, str | None],
        resolved: Mapping[str, str | None],
        definition: ConfigDef | None = None,
    ) -> None:
        """Register with the redactor the values of ``config``'s secret keys (PASSWORD-typed in
        ``definition``, by default the connector's, or secret-named), both as written (unless
        a value is exactly one provider reference, which holds no secret) and as resolved, and
        every password embedded in a URL-like value. ``resolved`` is ``config`` after config
        providers (the same mapping when there are none)."""
        if definition is None:
            definition = self.definition(config)
        self._register(self._secret_values(config, resolved, definition))

    def _secret_values(
        self,
        config: Mapping[str, str | None],
        resolved: Mapping[str, str | None],
        definition: ConfigDef | None,
    ) -> list[str | None]:
        """What :meth:`register_secrets` registers."""
        values: list[str | None] = list(self.masker.embedded_secrets(config))
        values += self.masker.embedded_secrets(resolved)
        for key in self.masker.secret_keys(config, definition):
            for value in (config.get(key), resolved.get(key)):
                # A reference (as written, or left unresolved) names a secret, holds none.
                if value is not None and not is_single_reference(value):
                    values.append(value)
        return values

    def unresolve(
        self,
        raw: Mapping[str, str],
        task_configs: list[dict[str, str]],
        resolved: Mapping[str, str] | None = None,
    ) -> list[dict[str, str]]:
        """Task configs as a connector generated them, with provider references put back.

        ``resolved`` is ``raw`` as the connector was started with it (resolved again when
        not given). The secrets of the task configs (the connector may have computed new ones)
        are registered with the redactor first."""
        definition = self.definition(raw) or ConfigDef()  # names only when unknown
        for task_config in task_configs:
            self.register_secrets(task_config, task_config, definition)
        if self.providers is None:
            return task_configs
        from connectrt.runtime.secrets.providers import unresolve_task_configs

        if resolved is None:
            resolved = self.resolve(raw)
        return unresolve_task_configs(raw, task_configs, resolved=resolved)

    def definition(self, config: Mapping[str, str | None]) -> ConfigDef | None:
        """The merged framework + connector ConfigDef for a config (cached per class)."""
        class_name = config.get("connector.class") or ""
        if class_name not in self._definitions:
            try:
                cls = self.registry.connector_class(class_name)
                self._definitions[class_name] = framework_def_for(cls).merge(cls().config_def())
            except Exception:
                return None
        return self._definitions[class_name]

    def masked(self, config: Mapping[str, str]) -> dict[str, str]:
        """``config`` with its secrets shown as ``[hidden]``."""
        return self.masker.mask(config, self.definition(config))

    def mask_task_config(
        self, task_config: Mapping[str, str], definition: ConfigDef | None
    ) -> dict[str, str]:
        return self.masker.mask(task_config, definition)

    def merge_hidden(self, config: Mapping[str, str], stored: Mapping[str, str]) -> dict[str, str]:
        """``config`` with ``[hidden]`` values replaced by what ``stored`` holds."""
        definition = self.definition(stored if stored else config)
        return self.masker.merge_hidden(config, stored, definition)
