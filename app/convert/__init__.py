"""Pure conversions of MPIJob manifests: older API versions to v2beta1, and v2beta1 to Kubeflow TrainJobs."""
