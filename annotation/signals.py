"""Signals the annotation app sends.

``preferences_recorded``: pairwise preferences of projects were written (``preferences``, the
rows; each with its ``project`` when the writer passed it), in the caller's transaction — sent by ``PairwisePreference.objects.bulk_create`` (the one
way the workspace mirrors pairwise labels, ``loop.labels.preference_record``) and by a single
row's save. A receiver that acts on the preferences defers itself to the commit
(``transaction.on_commit``): what it reads must be committed labels only.
"""

from django.dispatch import Signal

preferences_recorded = Signal()
