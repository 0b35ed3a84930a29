"""Reads for the annotation workspace, by concern: bounded queries, no per-row lookups.

``projects`` (roles and the projects a user may open), ``progress`` (counts for the lists and
the workspace), ``targets`` (what an item is about, as the workspace shows it) and
``workspace`` (one item's context, the adjudication queue). ``workspace.item_context_for``
is the one place that decides what a user may see of an item (blind mode); views and the API
must go through it.
"""
