"""``make faults``: the production topology on free local ports, and the faults it must survive.

``python -m faults`` starts PostgreSQL (the machine's when it answers, else a throwaway cluster;
always a throwaway one for the restart scenario), gunicorn with two workers, two Celery worker
processes, and Redis then RabbitMQ as broker (the machine's when they answer, else a Redis of its
own; a RabbitMQ that does not answer is reported as not run). It never stops, restarts or flushes
a service it did not start: a broker is cut through a TCP proxy it controls, and every database,
queue and folder it uses has a name of its own. It prints one row per scenario and exits 1 if
anything was lost (``faults.scenarios`` lists them).

Processes: the orchestrator (this package, no Django) drives the servers and asks the database
through ``faults.probe`` subprocesses (Django, on the scenario's database).
"""
