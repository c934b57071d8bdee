"""Real-node tests: MPIJobs run by a real kubelet, containerd and CoreDNS on this machine.

How to run them and what they prove: docs/testing.md.
"""
