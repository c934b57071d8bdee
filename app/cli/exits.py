"""The ``mpijob`` command's exit codes, shared by the argument parser and every subcommand.

docs/user-guide.md lists what each means per subcommand (tests/docs/test_cli_docs.py keeps that table true).
"""

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE, EXIT_INTERNAL = 0, 1, 2, 3
# ``serve`` only: the server could not start listening (address in use, no permission, bad metrics port).
EXIT_CANNOT_SERVE = 4
# Interrupted (Ctrl-C), as shells report SIGINT.
EXIT_INTERRUPTED = 130
# The reader of standard output went away (e.g. ``| head``), as shells report SIGPIPE: the command's own code
# is unknown then, and 0 would claim a result nobody read.
EXIT_BROKEN_PIPE = 141
