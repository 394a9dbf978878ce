"""The medical context of a conversation's user turns, kept for the claim check of its answers.

When a user turn is screened, :meth:`QuestionContexts.remember` reads its drugs and population
(:class:`~schemas.verdicts.MedicalContext`: derived data, never the question's text) and keeps
it per conversation when it says something; when an answer of the conversation is checked,
:meth:`QuestionContexts.for_answer` gives the context of the latest user turn before it in turn
order (a follow-up turn that names nothing keeps the earlier turn's context in force).

One value per conversation: a JSON list of ``[turn_index, context]``, sorted by turn, at most
``question_context_max_turns`` of them (the latest), so that a user turn logged late still finds
its place. The kind ``question-context`` is bounded by ``question_context_max_conversations`` and
``question_context_max_age_seconds`` (since the conversation's last user turn with a context).
"""

from __future__ import annotations

from pydantic import TypeAdapter

from schemas.events import ChatEvent
from schemas.verdicts import AMOUNT_CHARS, MedicalContext
from services.checking import ClaimChecker
from services.dataflow.state import KeyedStore, StateSpec
from services.settings import Settings

__all__ = ["QUESTIONS", "QuestionContexts"]

QUESTIONS = "question-context"
_ENTRIES = TypeAdapter(list[tuple[int, MedicalContext]])
#: JSON of one entry apart from its names: brackets, turn index, keys, the two ages, the body
#: weight and the kidney clearance, each number at its longest (a test fills every field).
_ENTRY_FIXED_BYTES = 240
#: JSON of one listed name apart from its characters: quotes and a comma.
_NAME_BYTES = 3
#: UTF-8 bytes of one character at most in an amount's unit ("µg").
_UNIT_CHAR_BYTES = 2


class QuestionContexts:
    """Reads user turns' contexts with the checker's lexicon and keeps them in a store of kind
    :data:`QUESTIONS` (see the module docstring)."""

    def __init__(self, settings: Settings, checker: ClaimChecker) -> None:
        self.checker = checker
        self.max_turns = settings.question_context_max_turns
        lex = checker.lexicon
        groups = lex.group_file
        drug = max((len(n) for n in lex.inns), default=0)
        group = max((len(g.key) for g in (*groups.populations, *groups.conditions)), default=0)
        #: Bytes of one entry at most: both lists full of the lexicon's longest names, the
        #: amounts' list full of the longest amounts.
        self.entry_bytes = (
            _ENTRY_FIXED_BYTES
            + _max_length("drugs") * (drug + _NAME_BYTES)
            + _max_length("populations") * (group + _NAME_BYTES)
            + _max_length("amounts") * (AMOUNT_CHARS * _UNIT_CHAR_BYTES + _NAME_BYTES)
        )
        self.spec = StateSpec(
            kind=QUESTIONS,
            max_entries=settings.question_context_max_conversations,
            ttl_seconds=settings.question_context_max_age_seconds,
            max_value_bytes=2 + self.max_turns * (self.entry_bytes + 1),
            description="Drugs and population of recent user turns (no text), by turn index.",
            setting="VIGIL_QUESTION_CONTEXT_MAX_TURNS",
        )

    def remember(self, store: KeyedStore, event: ChatEvent) -> MedicalContext | None:
        """Read a user turn's context and keep it when the lexicon finds something in it."""
        if event.role != "user":
            return None
        context = self.checker.medical_context(event)
        if not (context.drugs or context.populations or context.age_min_years is not None):
            return None
        cid = event.conversation_id
        kept = {turn: c for turn, c in self._load(store, cid)}
        kept[event.turn_index] = context
        entries = sorted(kept.items())[-self.max_turns :]
        value = _ENTRIES.dump_json(entries)
        while len(value) > self.spec.max_value_bytes and len(entries) > 1:  # not expected
            entries = entries[1:]
            value = _ENTRIES.dump_json(entries)
        if len(value) <= self.spec.max_value_bytes:
            store[cid] = value
        return context

    def for_answer(self, store: KeyedStore, event: ChatEvent) -> MedicalContext | None:
        """The context of the latest kept user turn before the answer ``event`` in turn order."""
        before = [
            c for turn, c in self._load(store, event.conversation_id) if turn < event.turn_index
        ]
        return before[-1] if before else None

    @staticmethod
    def _load(store: KeyedStore, conversation_id: str) -> list[tuple[int, MedicalContext]]:
        raw = store.get(conversation_id)
        if not raw:
            return []
        try:
            return _ENTRIES.validate_json(raw)
        except ValueError:  # an unreadable value: the conversation starts again
            return []


def _max_length(field: str) -> int:
    """The bound on a list of :class:`MedicalContext`."""
    meta = MedicalContext.model_fields[field].metadata
    return int(next(m.max_length for m in meta if hasattr(m, "max_length")))
