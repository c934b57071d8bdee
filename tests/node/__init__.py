"""Real-node tests: MPIJobs run by a real kubelet, containerd and CoreDNS on this machine (README)."""
