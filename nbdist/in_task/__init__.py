"""The task layer: code that runs inside a task's own process, between runtime and notebook.

`exec_service` runs the notebook's ``%%dtf_worker`` cells on the task's main thread;
`events` pushes a task's events (heartbeats, `report` metrics, cell output) to the
notebook. The entry point ``python -m nbdist.server`` loads them; nothing below the
notebook layer imports the notebook.
"""
