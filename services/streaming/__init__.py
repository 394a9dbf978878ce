"""Kafka wiring, all in this package: the Faust worker app (``app``) and the kafka-python admin
and producer helpers (``admin``). Nothing outside it talks to Kafka."""
