"""Buzz Orchestra: a benchmark orchestrator for AI agents in Buzz group chat, and its testbed."""

__version__ = "0.1.0"
