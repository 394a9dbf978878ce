"""Values the assistant repeats bare are found through the conversation memory.

"Mijn BSN is 123456782" fires pii.nl_bsn (a BSN word); "Genoteerd: 123456782." has no BSN word,
so no rule fires on it. The screening stage looks the answer's numbers and tokens up in the
conversation memory by keyed hash (never a value) and reports an ``echo`` of the rule that found
the value. A number the user never gave stays unreported. Measured on constructed conversations
in docs/detection-quality.md ("Values repeated bare in answers").
"""

from __future__ import annotations

from pathlib import Path

from services.screening.stage import repeat_candidates
from tests.unit.test_reorder import directions, ev, scan


def test_a_value_repeated_bare_is_found_through_the_memory(tmp_path: Path) -> None:
    rows = [
        ev("u0", 0, "user", "Mijn BSN is 123456782, kunt u mijn recept opzoeken?", 0),
        ev("a1", 1, "assistant", "Genoteerd: 123456782. Ik zoek het recept op.", 1),
        ev("a2", 2, "assistant", "Uw ordernummer is 111222333.", 2),  # never given: no finding
        ev("u3", 3, "user", "bel me op 06 1234 5678", 3),
        ev("a4", 4, "assistant", "Ik bel 06-12345678 straks.", 4),  # found by its rule anyway
    ]
    found, _ = scan(tmp_path, rows)
    [bare] = [f for f in found if f.event_id == "a1"]
    assert (bare.rule_id, bare.entity, bare.direction) == ("pii.nl_bsn", "NL_BSN", "echo")
    assert "123456782" not in bare.evidence and "keyed hash" in bare.explanation
    assert [f for f in found if f.event_id == "a2"] == []
    assert directions(found, "a4") == ["echo"]


def test_repeat_candidates_are_number_runs_and_tokens_with_digits() -> None:
    text = "Bệnh nhân: 123456782. Gọi 06 1234 5678 lúc 14:00, mã AB12CD34EF, 500 mg, v1.2.3"
    spans = {text[a:b] for a, b in repeat_candidates(text)}
    assert {"123456782", "06 1234 5678", "1234 5678", "AB12CD34EF"} <= spans
    assert not spans & {"14", "500", "1.2.3", "14:00"}
