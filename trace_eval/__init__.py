"""trace-eval: judge pairs of spoken answers by textual reasoning over audio cues (TRACE)."""

__version__ = "0.1.0"
