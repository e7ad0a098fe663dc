"""User-input errors that the CLI turns into one line and exit code 2."""
from __future__ import annotations


class InputError(ValueError):
    """Bad user input: names the key, the allowed range and the value received."""

    def __init__(self, key: str, allowed: str, value: object):
        self.key, self.allowed, self.value = key, allowed, value
        super().__init__(f"{key} == {value!r}, must be {allowed}.")
