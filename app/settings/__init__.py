"""Hook settings from ``MPI_OPERATOR_*`` environment variables, mirroring the Go operator's flags.

One group per concern, each in its module with its fields, checks and the files it names: what the answers
depend on (``answers``), the SSH keys' seed (``key_seed``), the server's transport limits (``transport``),
who may call (``caller``), Events (``events_settings``), the request recorder (``recording``), logs and
metrics (``observability``). ``Settings`` is all of them, one variable per field, as the Go operator takes
one flag per option.

Validation checks values only. ``load_settings`` checks each group, then looks at the files the valid ones
name, once: a bad value or an unusable file stops the process with one message naming every bad variable.
"""

from __future__ import annotations

from typing import cast

from pydantic import ValidationError

from app.settings.answers import AnswerSettings, answer_setting_defaults
from app.settings.base import SETTINGS_CONFIG, SettingsError, SettingsGroup, env_name, invalid
from app.settings.caller import CallerSettings
from app.settings.events_settings import EventsMode, EventsSettings
from app.settings.key_seed import KeySeedSettings
from app.settings.observability import ObservabilitySettings
from app.settings.recording import RecorderSettings
from app.settings.transport import TransportSettings

__all__ = [
    "EventsMode",
    "Settings",
    "SettingsError",
    "answer_setting_defaults",
    "env_name",
    "load_settings",
]


class Settings(
    AnswerSettings,
    KeySeedSettings,
    TransportSettings,
    CallerSettings,
    EventsSettings,
    RecorderSettings,
    ObservabilitySettings,
):
    """Every group's settings, as the hook runs with them (``load_settings`` checked their files)."""

    model_config = SETTINGS_CONFIG


# The groups, as Settings names them: load_settings checks each alone.
GROUPS = cast("tuple[type[SettingsGroup], ...]", Settings.__bases__)


def load_settings() -> Settings:
    """The settings of this process's environment; ``SettingsError`` naming every bad variable."""
    problems: list[str] = []
    for group in GROUPS:
        try:
            problems += group().file_problems()
        except ValidationError as err:
            problems += _problems(err)
    if problems:
        raise invalid(*problems)
    return Settings()


def _problems(err: ValidationError) -> list[str]:
    return [
        f"{env_name('_'.join(str(p) for p in e['loc']))}: {e['msg']}" if e["loc"] else e["msg"]
        for e in err.errors()
    ]
