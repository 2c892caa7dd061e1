"""The exceptions agentsim raises for bad input: all are ValueError."""


class EpisodeEnded(ValueError):
    """``step`` after the episode ended: call ``reset`` first."""


class ResetNeeded(ValueError):
    """``step`` before the first ``reset``."""
