"""Intake: a flag meets the queue and the tenant's cap (pure; the caller stores both states).

The cap is consulted only when the flag would open a new item: reasons merged into an open item
never use it up, and a re-delivered flag never reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.review import ReviewFlag, ReviewItem
from services.review.caps import AdmissionDecision, CapCounter, admit
from services.review.policy import TriagePolicy
from services.review.queue import Transition, apply, opens_round

__all__ = ["Intake", "intake"]


@dataclass(frozen=True, slots=True)
class Intake:
    transition: Transition
    #: The counter after this flag (unchanged when the cap was not consulted).
    counter: CapCounter | None
    #: The cap's decision, when the flag would open a round.
    admission: AdmissionDecision | None


def intake(
    item: ReviewItem | None,
    counter: CapCounter | None,
    flag: ReviewFlag,
    policy: TriagePolicy,
    *,
    key: bytes,
    partitions: int = 1,
) -> Intake:
    """Apply ``flag`` to the conversation's ``item`` under the tenant's cap ``counter``."""
    decision = None
    if opens_round(item, flag):
        counter, decision = admit(counter, flag, policy.caps, key=key, partitions=partitions)
    transition = apply(item, flag, policy.queue, admission=decision)
    return Intake(transition, counter, decision)
