"""The one error type that reaches the user as a single line (the CLI prints it, never a trace)."""
from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix (bad config, missing file, bad argument): printed as one line."""
