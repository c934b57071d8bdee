"""The policies: each a pure function from the observed job to a small frozen decision.

``plan.make_plan`` calls each once, in upstream's order, and hands each the values it needs from the
decisions before it; no policy reads another's decision. A new policy is a new module here and one line
in the plan. What each decides, and from what, is in docs/architecture.md ("The policies").
"""
