"""Talking to the Kubernetes API server, for the hook (Events) and the ``mpijob`` command (the doctor's
reads): one connection, one set of timeouts and bounds, one bearer-token reader, read again as the token
rotates."""
