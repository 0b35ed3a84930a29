"""The annotator loop: an item's life from claim to adjudication.

``claims`` (claim, skip, release, revisit) → ``labels`` (submit one or many, with the next
claim) → ``settle`` (complete an item at k labels, apply an agreed review, adjudicate, curate
the task) → ``undo``. Their rules are stated once in ``annotation.rules``; ``store`` holds the
loop's hand-written SQL, the only hand-written SQL of the project (an import-linter contract
keeps it inside this package).
"""
