"""Sub-command groups of the ``vigil`` command line (registered in ``services/cli.py``)."""
