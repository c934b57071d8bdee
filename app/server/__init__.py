"""The hook's HTTP server: the body guard, the routes around the pure core, logs, metrics, the memo."""
