"""The one dataflow of Vigil and its state (see :mod:`services.dataflow.flow`).

- :mod:`~services.dataflow.flow` — :class:`Dataflow`: every stage composed once
- :mod:`~services.dataflow.state` — :class:`KeyedStore` with a bound and a lifetime per kind
- :mod:`~services.dataflow.spill` — the SQLite spill file of ``vigil scan``
- :mod:`~services.dataflow.records` — :class:`Emit` and :class:`Effects`, what stages return
- :mod:`~services.dataflow.partitioning` — Kafka's default partition of a key

The runners are ``services/scan.py`` (files) and ``services/streaming/`` (Faust).
"""
