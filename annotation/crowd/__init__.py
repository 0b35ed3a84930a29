"""Crowd-platform studies (Prolific, MTurk and the like): a project opened to a platform's workers
through an entry link (``CrowdStudy``), each worker a pseudonymous annotator of that project only
(``CrowdWorker``), a quota of items each, a completion code at the end, and attention checks —
items with a known answer (``AttentionCheck``) handed out at a configured rate and counted per
annotator. The loop knows nothing of it but one claim hook (``annotation.loop.claims``)."""
