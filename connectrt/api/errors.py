"""The error types a plugin raises, as the plugin author imports them.

They are defined in :mod:`connectrt.errors` (the one module every layer may import, ``data``
included); this module is their place in the plugin API: every one of them, by the same name.
"""

from connectrt import errors as _errors
from connectrt.errors import *  # noqa: F403 (all of them: the list is connectrt.errors.__all__)

__all__ = list(_errors.__all__)
