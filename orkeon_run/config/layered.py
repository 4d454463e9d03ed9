"""Settings merged from several sources by precedence, through pydantic-settings' own
source mechanism: the shell's program-rule settings (shell_settings.py) and the run's
knobs (run_settings.py) are both built this way.

A source here is a function returning a dict of already checked values (each source
checks its own, so a bad value names the flag, variable or file it came from). The
sources depend on the call (its environment, its files), while pydantic-settings asks a
class for them (`settings_customise_sources`), so they reach it through a context
variable for the length of one construction: calls in other threads or tasks never see
each other's sources.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from functools import cache
from typing import Any

Loader = Callable[[], dict[str, Any]]

_pending: ContextVar[Sequence[Loader]] = ContextVar("orkeon_settings_sources")


@cache
def layered_base() -> Any:
    """A BaseSettings subclass whose instances take their sources per call:
    `Cls(_loaders=[highest precedence first, ...], **given)`, `given` above them all.
    Built on first use, so importing this module does not import pydantic-settings."""
    from pydantic.fields import FieldInfo  # nor pydantic (config/shell_settings.py)
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

    class Loaded(PydanticBaseSettingsSource):
        def __init__(self, settings_cls: type[BaseSettings], load: Loader) -> None:
            super().__init__(settings_cls)
            self._load = load

        def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
            return None, field_name, False

        def __call__(self) -> dict[str, Any]:
            return self._load()

    class Layered(BaseSettings):
        def __init__(self, *, _loaders: Sequence[Loader], **given: Any) -> None:
            token = _pending.set(_loaders)
            try:
                super().__init__(**given)
            finally:
                _pending.reset(token)

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, *(Loaded(settings_cls, load) for load in _pending.get()))

    return Layered
