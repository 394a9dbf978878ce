"""The monitor must not become a leak: planted canary PII never shows in worker logs or /metrics.

Unique canary values (email, IBAN, phone, card) are planted in user turns (given by the user,
then echoed) and in assistant turns (leaked), and in invalid messages that go to the dead-letter
topic. A worker at log level info processes them all; then neither its captured stdout/stderr nor
its ``/metrics`` text contains any canary in any form: as written, without separators, digits
only, in any case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tests.support.chat_events import event, write_jsonl
from tests.support.kafka_io import TopicReader
from tests.support.parity import ScanResult, compare, findings_of, key_of
from tests.support.worker_process import VigilStack

CONTENT_SENTINEL = "xylophone-7391-mauve"
USER_VALUES = {
    "email": "canary.zq81x@example.org",
    "iban": "NL16 INGB 0738 2915 64",
    "phone": "+31 6 4817 2093",
    "card": "4929 1384 7265 0173",
}
LEAKED_VALUES = {
    "email": "canary.leak.p7v3q@example.org",
    "iban": "NL29RABO0652817390",
    "phone": "+84 912 738 465",
}


def _forbidden() -> list[str]:
    """Every form a canary could take in text, lower-cased."""
    forms: set[str] = {CONTENT_SENTINEL, "zq81x", "p7v3q"}
    for value in (*USER_VALUES.values(), *LEAKED_VALUES.values()):
        forms.add(value.lower())
        forms.add(re.sub(r"[\s\-]", "", value).lower())
        digits = re.sub(r"\D", "", value)
        if len(digits) >= 9:
            forms.add(digits)
    forms.add("0648172093")  # the national forms of the phones
    forms.add("0912738465")
    return sorted(forms)


def _lines() -> list[dict[str, object] | bytes]:
    u, leak = USER_VALUES, LEAKED_VALUES
    lines: list[dict[str, object] | bytes] = []
    for n, lang in enumerate(["en", "nl", "vi"]):
        cid = f"canary-c{n}"
        turns = [
            ("user", f"My email is {u['email']} and my phone {u['phone']}. {CONTENT_SENTINEL}"),
            ("user", f"IBAN {u['iban']}, card {u['card']}."),
            (
                "assistant",
                f"Noted {u['email'].upper()} and {u['iban'].replace(' ', '')}; "
                f"also ask {leak['email']}.",
            ),
            ("assistant", f"Call {leak['phone']} or pay to {leak['iban']}. {CONTENT_SENTINEL}"),
            ("assistant", f"We will charge {u['card']} and call {u['phone']}."),
        ]
        for i, (role, text) in enumerate(turns):
            lines.append(event(f"{cid}-t{i}", cid, i, role, text, language=lang, tenant="acme"))
    bad_role = event("canary-bad", "canary-c9", 0, "wizard", f"{u['email']} {leak['iban']}")
    lines.append(json.dumps(bad_role).encode())
    lines.append(f'{{"content": "{u["phone"]} {CONTENT_SENTINEL}'.encode() + b"\xff\xfe")
    return lines


def test_canary_pii_never_in_logs_or_metrics(
    vigil_stack: Callable[..., VigilStack], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "canaries.jsonl", _lines())
    scan = ScanResult(path, tmp_path / "scan")
    want = scan.directions
    assert {"input", "echo", "leak"} <= set(want.values()), want
    assert len(scan.dead_letters) == 2

    stack = vigil_stack("canary")
    worker = stack.start_worker(loglevel="info")
    findings = TopicReader(stack.bootstrap, stack.findings_topic)
    dlq = TopicReader(stack.bootstrap, stack.dlq_topic)
    try:
        stack.replay(path)
        findings.read_until(
            lambda r: {key_of(f) for f in findings_of(r)} >= set(want),
            180,
            f"{len(want)} findings",
            stack.diagnostics,
        )
        dlq.read_until(lambda r: len(r) >= 2, 120, "2 dead letters", stack.diagnostics)
        got = {key_of(f): f.direction for f in findings_of(findings.records)}
        problem = compare(got, want, "worker findings vs scan")
        assert problem is None, problem
        metrics = worker.metrics()
    finally:
        findings.close()
        dlq.close()
    worker.stop()  # a graceful shutdown logs too; read the log after it
    log = worker.log_text()
    assert "[INFO]" in log, "the worker did not log at info level"

    for name, text in (("worker log", log), ("/metrics", metrics)):
        lowered = text.lower()
        leaked = [form for form in _forbidden() if form in lowered]
        assert not leaked, f"{name} contains canary values {leaked} ({worker.log_path})"
