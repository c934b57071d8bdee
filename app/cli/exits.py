"""The ``mpijob`` command's exit codes, shared by the argument parser and every subcommand."""

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE, EXIT_INTERNAL = 0, 1, 2, 3
