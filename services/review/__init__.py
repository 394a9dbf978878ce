"""The review queue (SPEC §8): triage policy, caps, a pure queue reducer, the review stage of the
dataflow (:mod:`~services.review.core`), stores, the reviewer API and web page, metrics. See
``docs/review.md``.

Kafka and Faust stay out of this package: :class:`~services.review.store.TableStore` wraps any
dict-like table and ``send`` callables, and :mod:`services.review.routing` only duck-types the
Faust app it is given. Import the submodules you need: this package imports nothing, so the
file runner does not load the web server's modules.
"""
