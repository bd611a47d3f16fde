"""The one error type for bad input at the boundary.

A `BadInput` names the field and what is allowed; the CLI prints it as a single line and exits 2."""


class BadInput(ValueError):
    """Input rejected at the boundary: `field` names what was wrong, `message` says what is allowed."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
