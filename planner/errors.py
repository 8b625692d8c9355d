"""The one exception type for user errors: its message is printed as one line, exit code 2."""


class PlannerError(Exception):
    """A problem with the user's input or request (bad file, unknown name, illegal plan, nothing fits)."""
