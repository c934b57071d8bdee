"""The ``mpijob`` command: serve the hook; render, lint and convert MPIJob manifests offline; replay recorded
requests; doctor a job in the cluster."""
