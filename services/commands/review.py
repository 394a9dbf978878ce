"""``vigil review``: the review queue from a terminal, over the reviewer HTTP API (httpx), and
``vigil review serve``, the API and page over a ``vigil scan`` output folder (no Kafka).

::

    vigil review list    [--status open,claimed|all] [--tenant T] [--reason CODE] [--rule GLOB]
                         [--band critical] [--since DATE] [--until DATE] [--mine] [--limit 50]
    vigil review show    CONVERSATION [--reveal --purpose TEXT]
    vigil review claim   CONVERSATION [--lease SECONDS]
    vigil review label   CONVERSATION (--all tp|fp|unsure | --finding ID|N=tp|fp|unsure ...)
                         [--harm LEVEL] [--category NAME ...] [--rubric NAME=VALUE ...]
                         [--answer-correct | --answer-wrong] [--relevant DOC_ID ...]
                         [--answer EVENT_ID] [--missed CATEGORY ...] [--corrects LABEL_ID]
                         [--claim EVENT_ID:INDEX=STATUS ...] [--note TEXT] [--expected-answer TEXT]
    vigil review release CONVERSATION
    vigil review assign  CONVERSATION (--to NAME | --unassign) [--hours H]
    vigil review serve   --from DIR [--host 127.0.0.1] [--port PORT]

Every client command takes ``--url`` (default ``VIGIL_REVIEW_URL``, else
``http://127.0.0.1:<VIGIL_WEB_PORT or 6066>``; any worker: requests are routed to the one that
owns the conversation), ``--token`` (better ``VIGIL_REVIEW_TOKEN``: a flag shows in the process
list) and ``--json`` (the API's JSON as it is). Errors name what went wrong (``401`` token,
``403`` the role that is missing, ``404`` no item, ``409`` who holds it) and exit 1; usage
errors exit 2. The token is never printed. Chat text is printed as text, never as markup, with
control characters replaced; ids are printed whole, never cut to the terminal's width.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn, get_args
from urllib.parse import quote

import httpx
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from schemas.outputs import Category
from schemas.review import LabelVerdict
from schemas.verdicts import ClaimStatus

__all__ = ["ApiError", "ReviewClient", "default_url", "review_app"]

_VERDICTS: dict[str, LabelVerdict] = {
    "tp": "true_positive",
    "true_positive": "true_positive",
    "fp": "false_positive",
    "false_positive": "false_positive",
    "unsure": "unsure",
    "?": "unsure",
}
_CATEGORIES: tuple[str, ...] = get_args(Category)


def default_url() -> str:
    """``VIGIL_REVIEW_URL``, else the local worker on ``VIGIL_WEB_PORT`` (default 6066)."""
    if url := os.environ.get("VIGIL_REVIEW_URL"):
        return url
    return f"http://127.0.0.1:{os.environ.get('VIGIL_WEB_PORT') or 6066}"


_CLAIM_STATUSES: tuple[str, ...] = get_args(ClaimStatus)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

review_app = typer.Typer(
    no_args_is_help=True,
    help="Work the review queue through a worker's reviewer API, or serve one over a scan folder.",
)


class ApiError(Exception):
    """The API answered an error: HTTP status, error code and detail (never the token)."""

    def __init__(self, status: int, code: str, detail: Any = None) -> None:
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code
        self.detail = detail

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "error": self.code, "detail": self.detail}


class ReviewClient:
    """The reviewer API's endpoints as methods returning its JSON; errors raise
    :class:`ApiError`, an unreachable API :class:`httpx.HTTPError`."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout_s,
        )

    def __enter__(self) -> ReviewClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        resp = self._http.request(method, f"/review/api{path}", params=params, json=body)
        try:
            data = resp.json()
        except ValueError:
            data = None
        if resp.status_code >= 400:
            if isinstance(data, dict) and isinstance(data.get("error"), str):
                raise ApiError(resp.status_code, data["error"], data.get("detail"))
            raise ApiError(resp.status_code, "http_error", resp.reason_phrase)
        if not isinstance(data, dict):
            raise ApiError(resp.status_code, "not_json", "the answer is not a JSON object")
        return data

    @staticmethod
    def _item(cid: str) -> str:
        return f"/items/{quote(cid, safe='')}"

    def list_items(self, status: str = "open,claimed", limit: int = 50, **filters: Any) -> Any:
        params = {"status": status, "limit": str(limit)}
        params |= {k: str(v) for k, v in filters.items() if v not in (None, False, "")}
        return self._call("GET", "/items", params=params)

    def show(self, cid: str) -> Any:
        return self._call("GET", self._item(cid))

    def reveal(self, cid: str, purpose: str, *, item_id: str | None = None) -> Any:
        body = _present({"purpose": purpose, "item_id": item_id})
        return self._call("POST", f"{self._item(cid)}/reveal", body=body)

    def assign(
        self,
        cid: str,
        assignee: str | None,
        *,
        hours: float | None = None,
        item_id: str | None = None,
    ) -> Any:
        body = {"assignee": assignee, **_present({"hours": hours, "item_id": item_id})}
        return self._call("POST", f"{self._item(cid)}/assign", body=body)

    def claim(
        self, cid: str, *, item_id: str | None = None, lease_seconds: int | None = None
    ) -> Any:
        body: dict[str, Any] = {"item_id": item_id, "lease_seconds": lease_seconds}
        return self._call("POST", f"{self._item(cid)}/claim", body=_present(body))

    def label(self, cid: str, body: dict[str, Any]) -> Any:
        return self._call("POST", f"{self._item(cid)}/label", body=_present(body))

    def release(self, cid: str, *, item_id: str | None = None) -> Any:
        return self._call("POST", f"{self._item(cid)}/release", body=_present({"item_id": item_id}))


def _present(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


# --- options and errors -------------------------------------------------------------------------

Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="The review API's address (default: VIGIL_REVIEW_URL, else "
        "http://127.0.0.1:<VIGIL_WEB_PORT or 6066>).",
        show_default=False,
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="VIGIL_REVIEW_TOKEN",
        help="Reviewer token (prefer the VIGIL_REVIEW_TOKEN variable).",
        show_default=False,
        show_envvar=True,
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the API's JSON.")]
Conversation = Annotated[str, typer.Argument(help="Conversation id.", show_default=False)]
ItemId = Annotated[
    str | None,
    typer.Option(
        "--item-id", help="Act only while this round is the current one.", show_default=False
    ),
]


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _out() -> Console:
    return Console(highlight=False)


def _usage(message: str) -> NoReturn:
    _err().print(Text("error: ", style="red") + Text(message))
    raise typer.Exit(2)


def _explain(exc: ApiError, cid: str | None, url: str) -> str:
    detail = exc.detail if isinstance(exc.detail, str) else None
    what = f"conversation {cid!r}" if cid is not None else "the queue"
    if exc.status == 401:
        return (
            "unauthorized: the API did not accept the token (missing, malformed or unknown); "
            "pass --token or set VIGIL_REVIEW_TOKEN"
        )
    if exc.status == 403:
        needs = detail or "a role it does not have"
        return f"forbidden: this token's reviewer {needs}"
    if exc.status == 404 and exc.code == "not_found":
        return f"not found: no review item for {what}"
    if exc.status == 404:
        return f"not found: is {url} a Vigil worker with the review API?"
    if exc.status == 409:
        reasons = {
            "claimed": f"already claimed: {detail}",
            "closed": f"the item is closed: {detail}",
            "not_claimed": "the item is not claimed: claim it first (vigil review claim)",
            "not_claimer": f"another reviewer holds the item: {detail}",
            "stale": f"a new round replaced that item: {detail}; look again (vigil review show)",
            "assigned": f"the item is {detail}",
            "second_reviewer": f"{detail}",
        }
        return f"conflict on {what}: " + reasons.get(exc.code, exc.code)
    if exc.status == 503:
        return "unavailable: the worker is rebalancing or recovering its tables; try again"
    if exc.status in (400, 422):
        if isinstance(exc.detail, list):
            parts = [f"{d.get('loc', '')}: {d.get('msg', '')}" for d in exc.detail]
            return f"rejected ({exc.code}): " + "; ".join(parts)
        return f"rejected ({exc.code}): {exc.detail}"
    return f"the API answered {exc.status} ({exc.code})"


class _Session:
    """One command's client, with the CLI's error handling around each call."""

    def __init__(self, url: str | None, token: str | None, as_json: bool) -> None:
        if not token:
            _usage("no token: pass --token or set VIGIL_REVIEW_TOKEN")
        url = url or default_url()
        self.url = url
        self.as_json = as_json
        self.client = ReviewClient(url, token)

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.__exit__()

    def call(self, cid: str | None, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, method)(*args, **kwargs)
        except ApiError as exc:
            if self.as_json:
                typer.echo(json.dumps(exc.as_dict(), ensure_ascii=False))
            _err().print(Text("error: ", style="red") + Text(_explain(exc, cid, self.url)))
            raise typer.Exit(1) from None
        except httpx.HTTPError as exc:
            _err().print(
                Text("error: ", style="red")
                + Text(f"cannot reach the review API at {self.url}: {type(exc).__name__}")
            )
            raise typer.Exit(1) from None

    def emit_json(self, data: Any) -> None:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _safe(text: Any) -> str:
    """Control characters (terminal escapes in hostile chat text) become U+FFFD; same length."""
    return _CONTROL.sub("\ufffd", str(text))


def _t(value: Any, style: str = "") -> Text:
    return Text(_safe("" if value is None else value), style=style)


# --- commands -----------------------------------------------------------------------------------


@review_app.command("list")
def list_items(
    status: Annotated[
        str, typer.Option(help="open, claimed, labeled, expired (comma-separated) or all.")
    ] = "open,claimed",
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
    reason: Annotated[
        str | None, typer.Option(help="Only items with one of these reason codes (commas).")
    ] = None,
    rule: Annotated[
        str | None, typer.Option(help="Only items with a reason from these rules (globs).")
    ] = None,
    band: Annotated[
        str | None, typer.Option(help="Only these priority bands: critical, high, medium, low.")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Created at or after (2026-11-02 or an RFC 3339 time).")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Created before.")] = None,
    mine: Annotated[
        bool, typer.Option("--mine", help="Only items claimed by, assigned to or labelled by me.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=500, help="At most this many items.")] = 50,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """The queue: mine first, then items anyone may take, by priority, then oldest."""
    filters = {
        "tenant": tenant,
        "reason": reason,
        "rule": rule,
        "band": band,
        "since": since,
        "until": until,
        "mine": "1" if mine else None,
    }
    with _Session(url, token, as_json) as s:
        data = s.call(None, "list_items", status, limit, **filters)
    if as_json:
        s.emit_json(data)
        return
    if data.get("partial"):
        _err().print("[yellow]warning:[/yellow] a worker did not answer: the list may be short")
    items = data.get("items", [])
    if not items:
        _out().print("no items")
        return
    _items_table(items)


def _items_table(items: list[dict[str, Any]]) -> None:
    """The queue as a table whose ids are never cut: the conversation id column does not wrap
    or shrink (a terminal narrower than the table scrolls or wraps the line instead)."""
    longest = max(len(_safe(i["conversation_id"])) for i in items)
    out = _out()
    width = max(out.width, longest + 60)
    table = Table(show_header=True, header_style="bold", expand=False)
    table.add_column("conversation", no_wrap=True, min_width=longest, overflow="fold")
    table.add_column("priority", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("tenant")
    table.add_column("reasons")
    table.add_column("findings", justify="right")
    table.add_column("claimed / assigned")
    table.add_column("created", no_wrap=True)
    for i in items:
        who = i.get("claimed_by") or ""
        if i.get("assigned_to"):
            who += f"{' / ' if who else ''}→ {i['assigned_to']}"
        state = i["status"] + (" ≠" if i.get("disagreement") else "")
        table.add_row(
            _t(i["conversation_id"]),
            _t(f"{i['priority']} {i['band']}"),
            _t(state),
            _t(i.get("tenant") or "-"),
            _t(", ".join(i.get("reasons", []))),
            _t(i.get("findings", 0)),
            _t(who),
            _t(i["created_at"][:19]),
        )
    Console(highlight=False, width=width).print(table)


def _turn_text(turn: dict[str, Any]) -> Text:
    text = _t(turn["text"])
    for mark in turn.get("marks", []):
        text.stylize("bold reverse" if mark.get("masked") else "bold underline", *_span(mark))
    return text


def _span(mark: dict[str, Any]) -> tuple[int, int]:
    return int(mark["start"]), int(mark["end"])


def _print_item(item: dict[str, Any]) -> None:
    out = _out()
    head = Text()
    head.append(_safe(item["item_id"]), style="bold")
    head.append(f"  {item['status']}  priority {item['priority']} ({item['band']})")
    head.append(f"  tenant {_safe(item.get('tenant') or '-')}  admission {item['admission']}")
    out.print(head)
    when = f"created {item['created_at']}  expires {item['expires_at']}"
    if item.get("claimed_by"):
        when += f"  claimed by {_safe(item['claimed_by'])} until {item['lease_expires_at']}"
    if item.get("labeled_by"):
        when += f"  labeled by {_safe(item['labeled_by'])} at {item['labeled_at']}"
    out.print(Text(when))
    if item.get("revealed"):
        out.print("[yellow]values revealed; this view was logged[/yellow]")
    reasons = Table(title="reasons", show_header=True, header_style="bold")
    for column in ("code", "priority", "source", "finding / event"):
        reasons.add_column(column)
    for r in item.get("reasons", []):
        reasons.add_row(
            _t(r["code"]),
            _t(r["priority"]),
            _t(r["source"]),
            _t(r.get("finding_id") or r["event_id"]),
        )
    out.print(reasons)
    findings = Table(title="findings", show_header=True, header_style="bold")
    for column in ("#", "finding", "rule", "entity", "severity", "direction", "evidence"):
        findings.add_column(column)
    for n, f in enumerate(item.get("findings", []), start=1):
        findings.add_row(
            _t(n),
            _t(f["finding_id"]),
            _t(f["rule_id"]),
            _t(f["entity"]),
            _t(f["severity"]),
            _t(f["direction"]),
            _t(f["evidence"]),
        )
    out.print(findings)
    for n, f in enumerate(item.get("findings", []), start=1):
        if f.get("plain"):
            out.print(_t(f"{n}. {f['plain']}"))
    for record in item.get("labels", []):
        d = record["decision"]
        said = f"label {record['label_id']} by {record['reviewer']} at {record['at']}"
        if record.get("supersedes"):
            said += f" (corrects {record['supersedes']})"
        parts = [f"harm {d.get('harm_severity') or '-'}"]
        if d.get("error_categories"):
            parts.append("categories " + ", ".join(d["error_categories"]))
        if d.get("answer_correct") is not None:
            parts.append("answer " + ("correct" if d["answer_correct"] else "wrong"))
        if d.get("relevant_doc_ids"):
            parts.append("relevant " + ", ".join(d["relevant_doc_ids"]))
        out.print(_t(said + ": " + "; ".join(parts)))
    if item.get("disagreement"):
        out.print(_t("reviewers disagree on: " + ", ".join(item["disagreement"]), "yellow"))
    for v in item.get("verdicts", []):
        checks = Table(
            title=f"fact checks of {_safe(v['event_id'])}", show_header=True, header_style="bold"
        )
        for column in ("#", "claim", "answer says", "registry holds", "status", "sources"):
            checks.add_column(column)
        for i, fc in enumerate(v.get("fact_checks", [])):
            c = fc["claim"]
            checks.add_row(
                _t(i),
                _t(f"{c['entity']} {c['attribute']}"),
                _t(c["value"]),
                _t(", ".join(fc.get("registered", [])) or "-"),
                _t(fc["status"]),
                _t(", ".join(fc.get("sources", []))),
            )
        if v.get("fact_checks"):
            out.print(checks)
    for turn in item.get("turns", []):
        line = Text(f"#{turn['turn_index']} {turn['role']}: ", style="bold")
        out.print(line + _turn_text(turn))


@review_app.command()
def show(
    conversation: Conversation,
    reveal: Annotated[
        bool,
        typer.Option(
            "--reveal", help="Show retained values (role reveal, your claim, --purpose; logged)."
        ),
    ] = False,
    purpose: Annotated[
        str | None, typer.Option(help="Why you need the values (logged with the reveal).")
    ] = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """One item: reasons, numbered findings, fact checks, labels, and the masked turns."""
    if reveal and not purpose:
        _usage("--reveal needs --purpose TEXT (why you need the values; it is logged)")
    with _Session(url, token, as_json) as s:
        if reveal:
            data = s.call(conversation, "reveal", conversation, purpose)
        else:
            data = s.call(conversation, "show", conversation)
    if as_json:
        s.emit_json(data)
    else:
        _print_item(data["item"])


@review_app.command()
def claim(
    conversation: Conversation,
    lease: Annotated[
        int | None, typer.Option(min=1, help="Lease in seconds (default: the policy's).")
    ] = None,
    item_id: ItemId = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Claim an item (or renew your own claim) for a lease."""
    with _Session(url, token, as_json) as s:
        data = s.call(conversation, "claim", conversation, item_id=item_id, lease_seconds=lease)
    if as_json:
        s.emit_json(data)
        return
    item = data["item"]
    _out().print(_t(f"claimed {item['item_id']} until {item['lease_expires_at']}"))


def _parse_findings(specs: list[str]) -> Iterator[tuple[str, LabelVerdict]]:
    for spec in specs:
        ref, sep, verdict = spec.rpartition("=")
        if not sep or not ref or verdict.lower() not in _VERDICTS:
            _usage(f"--finding {spec!r}: expected ID=tp|fp|unsure or N=tp|fp|unsure (N as in show)")
        yield ref, _VERDICTS[verdict.lower()]


def _parse_claims(specs: list[str]) -> list[dict[str, Any]]:
    out = []
    for spec in specs:
        m = re.fullmatch(r"(.+):(\d+)=(\w+)", spec)
        if m is None or m.group(3) not in _CLAIM_STATUSES:
            _usage(
                f"--claim {spec!r}: expected EVENT_ID:INDEX=STATUS, STATUS one of "
                + ", ".join(_CLAIM_STATUSES)
            )
        out.append({"event_id": m.group(1), "index": int(m.group(2)), "status": m.group(3)})
    return out


def _parse_rubric(specs: list[str]) -> dict[str, Any]:
    """``NAME=VALUE``: a number, yes/no (true/false), or a category name."""
    out: dict[str, Any] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        if not sep or not name or not raw:
            _usage(f"--rubric {spec!r}: expected NAME=VALUE")
        value: Any = raw
        if raw.lower() in ("yes", "true"):
            value = True
        elif raw.lower() in ("no", "false"):
            value = False
        else:
            try:
                value = float(raw)
            except ValueError:
                value = raw
        out[name] = value
    return out


Many = Annotated[list[str] | None, typer.Option(show_default=False)]


@review_app.command()
def label(
    conversation: Conversation,
    all_: Annotated[
        str | None,
        typer.Option(
            "--all", help="Verdict for every finding: tp, fp or unsure.", show_default=False
        ),
    ] = None,
    finding: Annotated[
        list[str] | None,
        typer.Option(
            "--finding",
            help="ID=tp|fp|unsure or N=... (N: number in show); repeatable; overrides --all.",
            show_default=False,
        ),
    ] = None,
    claim_status: Annotated[
        list[str] | None,
        typer.Option(
            "--claim",
            help="Corrected fact check: EVENT_ID:INDEX=STATUS (as numbered in show); repeatable.",
            show_default=False,
        ),
    ] = None,
    harm: Annotated[
        str | None, typer.Option(help="Harm severity (a level of the label schema).")
    ] = None,
    category: Annotated[
        list[str] | None,
        typer.Option("--category", help="Error category (repeatable).", show_default=False),
    ] = None,
    rubric: Annotated[
        list[str] | None,
        typer.Option("--rubric", help="Rubric field NAME=VALUE (repeatable).", show_default=False),
    ] = None,
    answer_correct: Annotated[
        bool | None,
        typer.Option(
            "--answer-correct/--answer-wrong",
            help="Whether the answer was correct and appropriate.",
            show_default=False,
        ),
    ] = None,
    relevant: Annotated[
        list[str] | None,
        typer.Option(
            "--relevant",
            help="A retrieved document that answers the question (repeatable).",
            show_default=False,
        ),
    ] = None,
    answer: Annotated[
        str | None,
        typer.Option(help="Event id of the answer judged (default: the flagged answer)."),
    ] = None,
    missed: Annotated[
        list[str] | None,
        typer.Option(
            "--missed",
            help="A category the rules should have flagged (repeatable).",
            show_default=False,
        ),
    ] = None,
    corrects: Annotated[
        str | None,
        typer.Option(
            help="Correct the item's latest label (its id, as in show).", show_default=False
        ),
    ] = None,
    note: Annotated[str | None, typer.Option(help="A note for the label.")] = None,
    expected_answer: Annotated[
        str | None, typer.Option(help="The answer the assistant should have given.")
    ] = None,
    item_id: ItemId = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Label a claimed item, or correct the latest label (--corrects), as the schema asks."""
    if all_ is not None and all_.lower() not in _VERDICTS:
        _usage(f"--all {all_!r}: expected tp, fp or unsure")
    given = list(_parse_findings(finding or []))
    claims = _parse_claims(claim_status or [])
    for name in missed or []:
        if name not in _CATEGORIES:
            _usage(f"--missed {name!r}: one of {', '.join(_CATEGORIES)}")
    with _Session(url, token, as_json) as s:
        item = s.call(conversation, "show", conversation)["item"]
        guard = item_id or item["item_id"]  # label the round we looked at, nothing newer
        ids = [f["finding_id"] for f in item["findings"]]
        if all_ is None and not given and ids:
            _usage("give --all tp|fp|unsure or a --finding for each finding")
        verdicts: dict[str, LabelVerdict] = {}
        if all_ is not None:
            verdicts = dict.fromkeys(ids, _VERDICTS[all_.lower()])
        for ref, verdict in given:
            if ref.isdigit():
                if not 1 <= int(ref) <= len(ids):
                    _usage(f"--finding {ref}: the item has {len(ids)} finding(s)")
                ref = ids[int(ref) - 1]
            verdicts[ref] = verdict
        body = {
            "item_id": guard,
            "corrects": corrects,
            "findings": [{"finding_id": k, "verdict": v} for k, v in verdicts.items()],
            "claims": claims,
            "harm_severity": harm,
            "error_categories": category or [],
            "rubric": _parse_rubric(rubric or []),
            "answer_event_id": answer,
            "answer_correct": answer_correct,
            "relevant_doc_ids": relevant,
            "missed_categories": missed or [],
            "note": note,
            "expected_answer": expected_answer,
        }
        data = s.call(conversation, "label", conversation, body)
    if as_json:
        s.emit_json(data)
        return
    counts = {v: list(verdicts.values()).count(v) for v in get_args(LabelVerdict)}
    done = data["item"]
    _out().print(
        _t(
            f"{'corrected' if corrects else 'labeled'} {done['item_id']} as {done['label_id']}: "
            f"{counts['true_positive']} true positive, {counts['false_positive']} false "
            f"positive, {counts['unsure']} unsure"
            + (f", {len(claims)} fact check(s) corrected" if claims else "")
            + (f"; status {done['status']}" if done["status"] != "labeled" else "")
        )
    )


@review_app.command()
def assign(
    conversation: Conversation,
    to: Annotated[str | None, typer.Option("--to", help="The reviewer who gets the item.")] = None,
    unassign: Annotated[bool, typer.Option("--unassign", help="Take the assignment back.")] = (
        False
    ),
    hours: Annotated[
        float | None, typer.Option(min=0.1, help="How long the assignment holds.")
    ] = None,
    item_id: ItemId = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Assign an item to a reviewer (others need the assign role), or take it back."""
    if (to is None) == (not unassign):
        _usage("give --to NAME or --unassign")
    with _Session(url, token, as_json) as s:
        data = s.call(conversation, "assign", conversation, to, hours=hours, item_id=item_id)
    if as_json:
        s.emit_json(data)
        return
    item = data["item"]
    if item.get("assigned_to"):
        _out().print(
            _t(
                f"assigned {item['item_id']} to {item['assigned_to']} until "
                f"{item['assignment_expires_at']}"
            )
        )
    else:
        _out().print(_t(f"{item['item_id']} is assigned to nobody"))


@review_app.command()
def release(
    conversation: Conversation,
    item_id: ItemId = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Give a claimed item back to the queue."""
    with _Session(url, token, as_json) as s:
        data = s.call(conversation, "release", conversation, item_id=item_id)
    if as_json:
        s.emit_json(data)
        return
    _out().print(_t(f"released {data['item']['item_id']}"))


@review_app.command()
def serve(
    folder: Annotated[
        Path,
        typer.Option(
            "--from",
            help="A `vigil scan --out` folder (review.jsonl, evalset.jsonl).",
            show_default=False,
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(min=1, max=65535, help="Port (default: VIGIL_WEB_PORT, else 6066)."),
    ] = None,
) -> None:
    """Serve the review API and page over a scan output folder, without Kafka.

    Labels go to DIR/labels.jsonl (EvalLabel) and DIR/review-labels.jsonl; reviewer tokens
    come from VIGIL_REVIEW_TOKENS or VIGIL_REVIEW_TOKENS_FILE.
    """
    from aiohttp import web

    from services.review.auth import TokenAuth
    from services.review.config import ReviewFileError
    from services.review.embedded import FolderError, FolderQueue, folder_app
    from services.review.settings import (
        ReviewConfigError,
        load_review_policy,
        load_worker_settings,
    )

    try:
        rs = load_worker_settings()
        policy = load_review_policy(rs)
        tokens = rs.all_tokens()
        queue = FolderQueue(folder, policy)
    except (ReviewConfigError, ReviewFileError, FolderError, ValueError) as exc:
        _err().print(Text("error: ", style="red") + Text(str(exc)))
        raise typer.Exit(2) from None
    if not tokens:
        queue.close()
        _err().print(
            Text("error: ", style="red")
            + Text(
                'no reviewer tokens: set VIGIL_REVIEW_TOKENS=\'{"<token>": {"name": "ann", '
                '"roles": ["reviewer"]}}\' or VIGIL_REVIEW_TOKENS_FILE'
            )
        )
        raise typer.Exit(2)
    try:
        summary = queue.import_folder()
        app = folder_app(queue, TokenAuth(tokens), rs)
    except (FolderError, ReviewFileError) as exc:
        queue.close()
        _err().print(Text("error: ", style="red") + Text(str(exc)))
        raise typer.Exit(2) from None
    listen = port or int(os.environ.get("VIGIL_WEB_PORT") or 6066)
    _err().print(
        Text(
            f"{summary.imported} item(s) imported, {summary.kept} kept from before, "
            f"{summary.replaced} replaced by a newer round, {summary.audit} unflagged case(s) "
            f"to audit; labels go to {folder / 'labels.jsonl'}\n"
            f"review page: http://{host}:{listen}/review/"
        )
    )
    web.run_app(app, host=host, port=listen, print=None, access_log=None)
