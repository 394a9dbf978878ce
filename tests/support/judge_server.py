"""A real, deterministic HTTP judge on loopback, for tests and manual runs (stdlib only).

It speaks both judge protocols over real HTTP/1.1 (keep-alive), from a ``ThreadingHTTPServer`` in
a background thread:

- ``POST /v1/entailment`` ``{premise, hypothesis, language}`` → ``{label, score}``
- ``POST /v1/chat/completions`` — an OpenAI-style chat completion whose
  ``choices[0].message.content`` is the JSON verdict. The user message must be the JSON object
  ``{premise, hypothesis, language}`` (what ``services.judge`` sends); ``temperature`` must be 0 and
  ``response_format`` ``{"type": "json_object"}``, else 400.

**The verdict rule** (:func:`decide`), applied in this order:

1. ``contradiction`` (score 0.9) if the hypothesis contains a number (``\\d+`` with optional
   ``.``/``,`` decimals, compared as written) that does not occur in the premise;
2. ``entailment`` (score ``entailment_score``, 0.95 by default) if every content word of the
   hypothesis — a ``\\w+`` token, lowercased, at least 3 characters long — occurs among the
   premise's content words (vacuously true for a hypothesis without content words);
3. ``neutral`` (score 0.8) otherwise.

**Modes**, switchable at runtime with :meth:`JudgeServer.set_mode`:

- ``healthy`` — answers by the rule;
- ``slow`` — waits ``slow_seconds`` before answering;
- ``failing`` — answers ``fail_status`` (500 by default; any 4xx/5xx, with ``Retry-After:
  retry_after`` when set);
- ``flaky`` — fails like ``failing`` for the first ``fail_first`` requests after the switch, then
  answers by the rule;
- ``malformed`` — 200 with a broken reply of kind ``malformed_kind``: ``bad_json``,
  ``wrong_label``, ``score_out_of_range``, ``missing_score``, ``no_choices``, ``content_not_json``
  (all but ``bad_json`` claim ``entailment`` where they can, to catch a client that trusts them);
- ``down`` — the listening socket is closed and open connections are cut: connection refused.
  Switching to any other mode listens again on the same port.

With ``api_key`` set, requests without ``Authorization: Bearer <api_key>`` get 401. Counters:
``requests`` (every request received, whatever the mode), ``by_path``, ``in_flight`` and
``max_in_flight``; ``received`` keeps the last 100 ``(path, headers, body)``.

Use it as a context manager (``with JudgeServer() as server: server.url``), from a pytest
fixture, or from the shell::

    python tests/support/judge_server.py --port 8089 --mode healthy
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import socket
import threading
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Self

__all__ = ["MALFORMED_KINDS", "MODES", "JudgeServer", "decide"]

MODES: Final = ("healthy", "slow", "failing", "flaky", "malformed", "down")
MALFORMED_KINDS: Final = (
    "bad_json",
    "wrong_label",
    "score_out_of_range",
    "missing_score",
    "no_choices",
    "content_not_json",
)
ENTAILMENT_PATH: Final = "/v1/entailment"
CHAT_PATH: Final = "/v1/chat/completions"
_OPTIONS: Final = frozenset(
    {
        "slow_seconds",
        "fail_first",
        "fail_status",
        "retry_after",
        "malformed_kind",
        "entailment_score",
    }
)

_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _content_words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if len(word) >= 3}


def decide(premise: str, hypothesis: str, *, entailment_score: float = 0.95) -> dict[str, Any]:
    """The deterministic verdict of the module docstring, as the reply object."""
    if set(_NUMBER.findall(hypothesis)) - set(_NUMBER.findall(premise)):
        return {"label": "contradiction", "score": 0.9}
    if _content_words(hypothesis) <= _content_words(premise):
        return {"label": "entailment", "score": entailment_score}
    return {"label": "neutral", "score": 0.8}


class _BadRequest(Exception):
    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: JudgeServer

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._track(request, add=True)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.owner._track(request, add=False)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out and hang up are the point of some tests: stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: Headers and body go out in two writes; without this, Nagle + delayed ACK add ~40 ms.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        settings = owner._enter(self.path, dict(self.headers.items()), raw)
        try:
            status, headers, body = owner._respond(self.path, self.headers, raw, settings)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            owner._leave()


class JudgeServer:
    """The loopback judge. ``port=0`` picks a free port, kept across ``down`` and back."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        mode: str = "healthy",
        api_key: str | None = None,
        slow_seconds: float = 1.0,
        fail_first: int = 2,
        fail_status: int = 500,
        retry_after: str | None = None,
        malformed_kind: str = "bad_json",
        entailment_score: float = 0.95,
    ) -> None:
        self.host = host
        self.port = port
        self.api_key = api_key
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.requests = 0
        self.by_path: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.received: deque[tuple[str, dict[str, str], bytes]] = deque(maxlen=100)
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        self._mode = mode
        self._mode_calls = 0
        self._started = False
        self._options: dict[str, Any] = {}
        self._set_options(
            slow_seconds=slow_seconds,
            fail_first=fail_first,
            fail_status=fail_status,
            retry_after=retry_after,
            malformed_kind=malformed_kind,
            entailment_score=entailment_score,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def start(self) -> Self:
        if not self._started:
            self._started = True
            self._listen()
            if self._mode == "down":
                self._stop_listening()
        return self

    def stop(self) -> None:
        """Shut the server down for good (``set_mode`` no longer brings it back)."""
        self._started = False
        self._stop_listening()

    def _stop_listening(self) -> None:
        """Close the listening socket and cut every open connection (refused / reset)."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._httpd = self._thread = None
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
            self._connections.clear()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def set_mode(self, mode: str, **options: Any) -> None:
        """Switch mode (and any of the constructor's options) for the requests that follow."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        with self._lock:
            self._mode = mode
            self._mode_calls = 0
        self._set_options(**options)
        if mode == "down":
            self._stop_listening()
        elif self._started and self._httpd is None:
            self._listen()

    def _set_options(self, **options: Any) -> None:
        unknown = set(options) - _OPTIONS
        if unknown:
            raise ValueError(f"unknown options {sorted(unknown)}")
        if options.get("malformed_kind", "bad_json") not in MALFORMED_KINDS:
            raise ValueError(f"unknown malformed_kind; one of {MALFORMED_KINDS}")
        with self._lock:
            self._options.update(options)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = 0
            self.by_path.clear()
            self.max_in_flight = self.in_flight
            self.received.clear()

    def _listen(self) -> None:
        self._stopping = threading.Event()
        httpd = _Server((self.host, self.port), _Handler)
        httpd.owner = self
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"judge-server-{self.port}",
            daemon=True,
        )
        self._thread.start()

    # -- request handling (called from handler threads) -------------------------------------

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _enter(self, path: str, headers: dict[str, str], raw: bytes) -> dict[str, Any]:
        with self._lock:
            self.requests += 1
            self.by_path[path] += 1
            self.received.append((path, headers, raw))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._mode_calls += 1
            return {
                **self._options,
                "mode": self._mode,
                "call": self._mode_calls,
                "stopping": self._stopping,
            }

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _respond(
        self, path: str, headers: Any, raw: bytes, settings: dict[str, Any]
    ) -> tuple[int, dict[str, str], bytes]:
        if path not in (ENTAILMENT_PATH, CHAT_PATH):
            return _error(404, "no such endpoint")
        if self.api_key is not None and headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "missing or wrong bearer token")
        try:
            request = _parse_request(path, raw)
        except _BadRequest as exc:
            return _error(400, str(exc))
        mode = settings["mode"]
        if mode == "slow":
            settings["stopping"].wait(settings["slow_seconds"])
        if mode == "failing" or (mode == "flaky" and settings["call"] <= settings["fail_first"]):
            extra = {"Retry-After": settings["retry_after"]} if settings["retry_after"] else {}
            return _error(settings["fail_status"], f"judge mode {mode}", extra)
        verdict = decide(
            request["premise"],
            request["hypothesis"],
            entailment_score=settings["entailment_score"],
        )
        if mode == "malformed":
            return _malformed(path, settings["malformed_kind"], request)
        if path == CHAT_PATH:
            return _json(200, _completion(request.get("model", ""), json.dumps(verdict)))
        return _json(200, verdict)


def _parse_request(path: str, raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise _BadRequest("body is not JSON") from exc
    if not isinstance(body, dict):
        raise _BadRequest("body is not an object")
    if path == CHAT_PATH:
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise _BadRequest("model is required")
        if body.get("temperature") != 0:
            raise _BadRequest("temperature must be 0")
        if body.get("response_format") != {"type": "json_object"}:
            raise _BadRequest("response_format must be json_object")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
            raise _BadRequest("messages must be a non-empty list")
        if messages[-1].get("role") != "user":
            raise _BadRequest("the last message must be the user's")
        try:
            data = json.loads(messages[-1]["content"])
        except (KeyError, TypeError, ValueError) as exc:
            raise _BadRequest("the user message must be a JSON object") from exc
        if not isinstance(data, dict):
            raise _BadRequest("the user message must be a JSON object")
        data["model"] = body["model"]
        body = data
    if not isinstance(body.get("premise"), str) or not isinstance(body.get("hypothesis"), str):
        raise _BadRequest("premise and hypothesis must be strings")
    if body.get("language") is not None and not isinstance(body["language"], str):
        raise _BadRequest("language must be a string or null")
    return body


def _json(
    status: int, payload: object, extra: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json", **(extra or {})}
    return status, headers, json.dumps(payload).encode()


def _error(
    status: int, message: str, extra: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    return _json(status, {"error": {"message": message}}, extra)


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-judge",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _malformed(path: str, kind: str, request: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json"}
    if kind == "bad_json":
        return 200, headers, b'{"label": "entailment", "score": 0.9'
    if kind == "no_choices":
        return _json(200, {"id": "chatcmpl-judge", "object": "chat.completion", "choices": []})
    text = {
        "wrong_label": json.dumps({"label": "yes", "score": 0.9}),
        "score_out_of_range": json.dumps({"label": "entailment", "score": 1.5}),
        "missing_score": json.dumps({"label": "entailment"}),
        "content_not_json": "The premise entails the hypothesis.",
    }[kind]
    if path == CHAT_PATH:
        return _json(200, _completion(request.get("model", ""), text))
    return 200, headers, text.encode()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--mode", choices=[m for m in MODES if m != "down"], default="healthy")
    parser.add_argument("--api-key")
    parser.add_argument("--slow-seconds", type=float, default=1.0)
    parser.add_argument("--fail-first", type=int, default=2)
    parser.add_argument("--fail-status", type=int, default=500)
    parser.add_argument("--retry-after")
    parser.add_argument("--malformed-kind", choices=MALFORMED_KINDS, default="bad_json")
    parser.add_argument("--entailment-score", type=float, default=0.95)
    args = parser.parse_args(argv)
    server = JudgeServer(
        args.host,
        args.port,
        mode=args.mode,
        api_key=args.api_key,
        slow_seconds=args.slow_seconds,
        fail_first=args.fail_first,
        fail_status=args.fail_status,
        retry_after=args.retry_after,
        malformed_kind=args.malformed_kind,
        entailment_score=args.entailment_score,
    )
    with server:
        print(f"judge on {server.url} mode={server.mode} (Ctrl-C to stop)", flush=True)
        done = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: done.set())
        while not done.wait(0.5):
            pass
        print(f"served {server.requests} requests", flush=True)


if __name__ == "__main__":
    main()
