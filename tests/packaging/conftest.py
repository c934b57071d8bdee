"""These tests build deploy/ with ``kubectl kustomize``: Metacontroller's manifests are served locally."""

from tests.support.metacontroller_standin import served_metacontroller

__all__ = ["served_metacontroller"]  # autouse, session-scoped: a fixture pytest finds here by name
