"""What every group of settings shares: the variables' prefix, their names, and the one start-up error."""

from __future__ import annotations

from collections.abc import Callable

from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "MPI_OPERATOR_"
SETTINGS_CONFIG = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="ignore")


class SettingsError(RuntimeError):
    """Start-up configuration is invalid; the message names each bad variable (``problems``: each one's)."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


def invalid(*problems: str) -> SettingsError:
    """The error for these problems, each ``VARIABLE: what is wrong``, in one message."""
    return SettingsError(f"invalid hook settings: {'; '.join(problems)}", problems)


def env_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    return f"{PREFIX}{field.upper()}"


class SettingsGroup(BaseSettings):
    """One concern's settings. ``file_problems`` looks at the files its values name (start-up asks, once,
    after the values are valid; validation itself never touches a file)."""

    model_config = SETTINGS_CONFIG

    def file_problems(self) -> list[str]:
        """Each problem with a file this group names, as ``VARIABLE: what is wrong``."""
        return []


def as_written(value: object, case: Callable[[str], str] = str.lower) -> object:
    """A choice as the variable may write it: surrounding spaces dropped, in any case (``case`` gives the
    one the choices use). What is not text goes on to the field's own check."""
    return case(value.strip()) if isinstance(value, str) else value
