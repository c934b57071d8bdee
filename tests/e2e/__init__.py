"""End-to-end tests: our manifests and hook in a real control plane (apiserver, Job controller,
Metacontroller)."""
