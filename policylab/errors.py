"""The one error type for bad input at the boundary.

A `BadInput` names the field and what is allowed; the CLI prints it as a single line and exits 2."""


class BadInput(ValueError):
    """Input rejected at the boundary: `field` names what was wrong, `message` says what is allowed."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self):
        """Rebuilt from its field, message and attributes, whatever its subclass's constructor takes: a refusal
        raised in a worker process crosses back to the parent (pickled) as the same one line, where the default
        would call the subclass's constructor with the wrong arguments and break the process pool."""
        return _rebuilt, (type(self), self.field, self.message), self.__dict__


def _rebuilt(cls: type[BadInput], field: str, message: str) -> BadInput:
    error = cls.__new__(cls)
    BadInput.__init__(error, field, message)
    return error
