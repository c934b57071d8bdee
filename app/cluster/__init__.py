"""Talking to the Kubernetes API server, for the hook (Events) and the ``mpijob`` command (the doctor's reads,
``convert --runtime``): connecting as the user (``kubeconfig.py``, its files and exec plugins) or as the Pod,
one connection, one set of timeouts and bounds, one bearer-token reader, read again as the token rotates."""
