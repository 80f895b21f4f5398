"""The one exception type for mistakes a user can fix.

Anything the user can correct (a flag, a file, a line of input, a record, a checkpoint that does not fit) raises
`InputError` or a subclass, with a message that names the flag, file, line or record and says what to change.
Scripts run through `official.nlp.common.cli.run`, which prints such an error as one line on stderr and exits
non-zero without a traceback; every other exception is a bug and keeps its traceback.
"""


class InputError(ValueError):
    """A mistake the user can fix; the message names where it is and what to change."""


class MissingInputError(InputError, FileNotFoundError):
    """A file or folder the user named (or that should be next to it) is not there."""


class OutputExistsError(InputError, FileExistsError):
    """An output would overwrite something the user made earlier."""
