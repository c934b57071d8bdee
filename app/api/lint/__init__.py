"""Lint rules for MPIJobs: the silent mistakes, and everything validation or the CRD would reject.

One pure module shared by ``mpijob lint`` (before apply) and the sync hook (a warning condition after
apply). ``lint(job, raw)`` takes the parsed model and, optionally, the manifest as written, for rules about
fields the CRD prunes (``slotsPerWorker`` inside a replica spec). Each finding names its rule, severity,
field path (dotted, as ``kubectl`` prints it), what is wrong and how to fix it. A rule can be silenced per
job with the annotation ``mpijob-lint/ignore: "<rule>,<rule>"``. Only ``app.api`` is imported here.

The rules live in one module per topic (``crd_rules``, ``metadata_rules``, ``command_rules``, ``gpu_rules``,
``ssh_rules``, ``failure_rules``); ``catalog`` lists them, ``runner`` runs them in the order
``catalog.Rule`` gives.
"""

from app.api.lint.catalog import IGNORE_ANNOTATION, RULES, SEVERITIES, Rule
from app.api.lint.findings import Finding, Severity
from app.api.lint.runner import lint, lint_manifest

__all__ = ["IGNORE_ANNOTATION", "RULES", "SEVERITIES", "Finding", "Rule", "Severity", "lint", "lint_manifest"]
