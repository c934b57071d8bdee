"""The ``mpijob`` command: serve the hook; render, lint and convert MPIJob manifests offline."""
