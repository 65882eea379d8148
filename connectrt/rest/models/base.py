"""What every REST body model shares: :class:`Body` (its ``wire()`` JSON), :class:`Model`
(a response body that may carry extra keys), the error body, and Kafka Connect's lenient
reading of a connector config (:func:`config_map`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from connectrt.runtime.errors import BadRequestError

__all__ = ["Body", "ConfigValue", "ErrorBody", "Model", "config_map"]


ConfigValue = str | int | float | bool


class Body(BaseModel):
    def wire(self) -> dict[str, Any]:
        """The JSON object of this body: the fields set (in declaration order, by alias),
        then the extra keys."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class Model(Body):
    model_config = ConfigDict(extra="allow")


def config_map(value: Any, allow_null: bool = False) -> dict[str, Any]:
    """A connector config from a JSON body: an object whose values are strings (numbers and
    booleans become strings, as Kafka Connect reads them; null kept when ``allow_null``).
    BadRequestError otherwise."""
    if not isinstance(value, dict):
        raise BadRequestError("Connector configuration must be a JSON object of strings")
    out: dict[str, Any] = {}
    for k, v in value.items():
        if v is None and allow_null:
            out[k] = None
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        elif isinstance(v, str | int | float):
            out[k] = str(v)
        else:
            raise BadRequestError(f"Configuration value for '{k}' must be a string")
    return out


class ErrorBody(BaseModel):
    """Every error: Kafka Connect's ``{"error_code", "message"}``."""

    error_code: int = Field(description="The HTTP status code")
    message: str
