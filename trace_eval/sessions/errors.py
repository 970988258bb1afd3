"""The error every reader of sessions raises: what cannot be read as a session, with the reason."""

__all__ = ["SessionError"]


class SessionError(ValueError):
    """What cannot be read as a session, with the reason."""
