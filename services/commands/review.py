"""``vigil review``: the review queue from a terminal, over the reviewer HTTP API (httpx).

::

    vigil review list    [--status open,claimed|all] [--tenant T] [--limit 50]
    vigil review show    CONVERSATION [--reveal]
    vigil review claim   CONVERSATION [--lease SECONDS]
    vigil review label   CONVERSATION (--all tp|fp | --finding ID|N=tp|fp ...)
                         [--claim EVENT_ID:INDEX=STATUS ...] [--note TEXT] [--expected-answer TEXT]
    vigil review release CONVERSATION

Every command takes ``--url`` (default ``http://127.0.0.1:6066``, or ``VIGIL_REVIEW_URL``; any
worker: requests are routed to the one that owns the conversation), ``--token`` (better
``VIGIL_REVIEW_TOKEN``: a flag shows in the process list) and ``--json`` (the API's JSON as it
is). Errors name what went wrong (``401`` token, ``403`` role, ``404`` no item, ``409`` who holds
it) and exit 1; usage errors exit 2. The token is never printed. Chat text is printed as text,
never as markup, with control characters replaced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Annotated, Any, NoReturn, get_args
from urllib.parse import quote

import httpx
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from schemas.review import LabelVerdict
from schemas.verdicts import ClaimStatus

__all__ = ["DEFAULT_URL", "ApiError", "ReviewClient", "review_app"]

DEFAULT_URL = "http://127.0.0.1:6066"
_VERDICTS: dict[str, LabelVerdict] = {
    "tp": "true_positive",
    "true_positive": "true_positive",
    "fp": "false_positive",
    "false_positive": "false_positive",
}
_CLAIM_STATUSES: tuple[str, ...] = get_args(ClaimStatus)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

review_app = typer.Typer(
    no_args_is_help=True,
    help="Work the review queue through a worker's reviewer API.",
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

    def list_items(
        self, status: str = "open,claimed", tenant: str | None = None, limit: int = 50
    ) -> Any:
        params = {"status": status, "limit": str(limit)}
        if tenant:
            params["tenant"] = tenant
        return self._call("GET", "/items", params=params)

    def show(self, cid: str, *, reveal: bool = False) -> Any:
        return self._call("GET", self._item(cid), params={"reveal": "1"} if reveal else None)

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
    str, typer.Option("--url", envvar="VIGIL_REVIEW_URL", help="A worker's web address.")
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
        return "forbidden: this token's reviewer lacks the role (--reveal needs the reveal role)"
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

    def __init__(self, url: str, token: str | None, as_json: bool) -> None:
        if not token:
            _usage("no token: pass --token or set VIGIL_REVIEW_TOKEN")
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
    limit: Annotated[int, typer.Option(min=1, max=500, help="At most this many items.")] = 50,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """The queue, highest priority first, then oldest."""
    with _Session(url, token, as_json) as s:
        data = s.call(None, "list_items", status, tenant, limit)
    if as_json:
        s.emit_json(data)
        return
    if data.get("partial"):
        _err().print("[yellow]warning:[/yellow] a worker did not answer: the list may be short")
    items = data.get("items", [])
    if not items:
        _out().print("no items")
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("priority", "status", "conversation", "tenant", "reasons", "findings"):
        table.add_column(column, justify="right" if column in ("priority", "findings") else "left")
    table.add_column("claimed by")
    table.add_column("created")
    for i in items:
        table.add_row(
            _t(f"{i['priority']} {i['band']}"),
            _t(i["status"]),
            _t(i["conversation_id"]),
            _t(i.get("tenant") or "-"),
            _t(", ".join(i.get("reasons", []))),
            _t(i.get("findings", 0)),
            _t(i.get("claimed_by") or ""),
            _t(i["created_at"][:19]),
        )
    _out().print(table)


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
    for v in item.get("verdicts", []):
        checks = Table(
            title=f"fact checks of {_safe(v['event_id'])}", show_header=True, header_style="bold"
        )
        for column in ("#", "claim", "status", "sources"):
            checks.add_column(column)
        for i, fc in enumerate(v.get("fact_checks", [])):
            c = fc["claim"]
            checks.add_row(
                _t(i),
                _t(f"{c['entity']} {c['attribute']} = {c['value']}"),
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
        bool, typer.Option("--reveal", help="Show retained values (role reveal; logged).")
    ] = False,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """One item: reasons, numbered findings, fact checks, and the masked turns."""
    with _Session(url, token, as_json) as s:
        data = s.call(conversation, "show", conversation, reveal=reveal)
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
    url: Url = DEFAULT_URL,
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
            _usage(f"--finding {spec!r}: expected ID=tp|fp or N=tp|fp (N as numbered by show)")
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


@review_app.command()
def label(
    conversation: Conversation,
    all_: Annotated[
        str | None,
        typer.Option("--all", help="Verdict for every finding: tp or fp.", show_default=False),
    ] = None,
    finding: Annotated[
        list[str] | None,
        typer.Option(
            "--finding",
            help="ID=tp|fp or N=tp|fp (N: number in show); repeatable; overrides --all.",
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
    note: Annotated[str | None, typer.Option(help="A note for the label.")] = None,
    expected_answer: Annotated[
        str | None, typer.Option(help="The answer the assistant should have given.")
    ] = None,
    item_id: ItemId = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Label a claimed item: a verdict for every finding, optional fact-check corrections."""
    if all_ is not None and all_.lower() not in _VERDICTS:
        _usage(f"--all {all_!r}: expected tp or fp")
    given = list(_parse_findings(finding or []))
    claims = _parse_claims(claim_status or [])
    if all_ is None and not given:
        _usage("give --all tp|fp or at least one --finding")
    with _Session(url, token, as_json) as s:
        verdicts: dict[str, LabelVerdict] = {}
        guard = item_id
        if all_ is not None or any(ref.isdigit() for ref, _ in given):
            item = s.call(conversation, "show", conversation)["item"]
            guard = guard or item["item_id"]  # label the round we looked at, nothing newer
            ids = [f["finding_id"] for f in item["findings"]]
            if all_ is not None:
                verdicts = dict.fromkeys(ids, _VERDICTS[all_.lower()])
            for ref, verdict in given:
                if ref.isdigit():
                    if not 1 <= int(ref) <= len(ids):
                        _usage(f"--finding {ref}: the item has {len(ids)} finding(s)")
                    ref = ids[int(ref) - 1]
                verdicts[ref] = verdict
        else:
            verdicts = dict(given)
        body = {
            "item_id": guard,
            "findings": [{"finding_id": k, "verdict": v} for k, v in verdicts.items()],
            "claims": claims,
            "note": note,
            "expected_answer": expected_answer,
        }
        data = s.call(conversation, "label", conversation, body)
    if as_json:
        s.emit_json(data)
        return
    counts = {v: list(verdicts.values()).count(v) for v in ("true_positive", "false_positive")}
    _out().print(
        _t(
            f"labeled {data['item']['item_id']}: {counts['true_positive']} true positive, "
            f"{counts['false_positive']} false positive"
            + (f", {len(claims)} fact check(s) corrected" if claims else "")
        )
    )


@review_app.command()
def release(
    conversation: Conversation,
    item_id: ItemId = None,
    url: Url = DEFAULT_URL,
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
