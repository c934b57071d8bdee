"""``mpijob doctor``: why an MPIJob in the cluster is stuck or failed, from what the cluster says.

``kubeconfig`` and ``client`` read (GET only); ``snapshot`` holds what was read; ``facts`` reads it as the
hook does; ``checks*`` judge it (pure: no I/O, the import-linter contracts in pyproject.toml); ``command``
is the subcommand.
"""
