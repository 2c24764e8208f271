"""Limits of Buzz channel metadata that the relay enforces and the client checks first
(protocol.md §6): one definition, so the two can never disagree."""

CHANNEL_NAME_MAX_CHARS = 100
CHANNEL_ABOUT_MAX_CHARS = 2000
