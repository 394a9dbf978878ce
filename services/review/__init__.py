"""The review queue (SPEC §8): triage policy, caps, a pure queue reducer, stores, the reviewer
API and web page, metrics, and the ``vigil scan`` variant. See ``docs/review.md``.

Kafka and Faust stay out of this package: :class:`~services.review.store.TableStore` wraps any
dict-like table and ``send`` callables, and :mod:`services.review.routing` only duck-types the
Faust app it is given.
"""

from services.review.api import ReviewAPI, create_review_app, item_view
from services.review.auth import ReviewAuthSettings, Reviewer, TokenAuth
from services.review.caps import AdmissionDecision, CapCounter, admit, counter_key
from services.review.evidence import make_flag, mask_turn, reveal_turn
from services.review.intake import Intake, intake
from services.review.metrics import ReviewMetrics, precision_update
from services.review.page import page_routes
from services.review.policy import PolicyError, TriagePolicy, band, load_policy
from services.review.queue import Rejection, Tick, Transition, apply, opens_round
from services.review.routing import faust_locator, faust_peers, owner_partition
from services.review.scan import ReviewScanner, scan_review
from services.review.store import MemoryStore, ReviewStore, TableStore

__all__ = [
    "AdmissionDecision",
    "CapCounter",
    "Intake",
    "MemoryStore",
    "PolicyError",
    "Rejection",
    "ReviewAPI",
    "ReviewAuthSettings",
    "ReviewMetrics",
    "ReviewScanner",
    "ReviewStore",
    "Reviewer",
    "TableStore",
    "Tick",
    "TokenAuth",
    "Transition",
    "TriagePolicy",
    "admit",
    "apply",
    "band",
    "counter_key",
    "create_review_app",
    "faust_locator",
    "faust_peers",
    "intake",
    "item_view",
    "load_policy",
    "make_flag",
    "mask_turn",
    "opens_round",
    "owner_partition",
    "page_routes",
    "precision_update",
    "reveal_turn",
    "scan_review",
]
