"""Calls into a plugin's configuration code that answer a client error when the plugin fails.

A connector's constructor, ``config_def()`` and ``validate()`` are plugin code: when one raises
something other than a :class:`~connectrt.errors.ConfigError` (which already means "this
config is invalid"), the request that needed it is still a client's request about that plugin,
not a fault of the worker, so it gets HTTP 400 naming the plugin, the call and the error,
rather than a 500. Stateless; any thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from connectrt.errors import ConfigError
from connectrt.runtime.errors import BadRequestError

__all__ = ["plugin_call"]

T = TypeVar("T")


def plugin_call(plugin: type | str, call: str, fn: Callable[[], T]) -> T:
    """``fn()``, with any exception but a ConfigError or BadRequestError turned into a
    BadRequestError: ``<plugin>.<call> failed: <Type>: <message>``."""
    try:
        return fn()
    except (ConfigError, BadRequestError):
        raise
    except Exception as e:
        name = plugin.__name__ if isinstance(plugin, type) else plugin
        raise BadRequestError(f"{name}.{call} failed: {type(e).__name__}: {e}") from e
