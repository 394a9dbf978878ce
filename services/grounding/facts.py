"""The fact registry: facts from JSONL / CSV files, indexed on ``(entity, attribute)``.

Claims are decided with exactly the rule of :func:`services.evaluation.claim_support` — the
registry calls the same :func:`~services.evaluation.support_status` — but against an index, so
there is no 128-fact limit. Values are compared as given (``"4g"`` is not ``"4 g"``); making an
answer's value look like the registry's (``4 gram`` → ``4 g``) is the extractors' job.

File formats (UTF-8; lines starting with ``#`` are comments, blank lines are skipped):

- ``*.jsonl``: one object per line with exactly the keys ``entity, attribute, value, source``;
- ``*.csv``: a header row ``entity,attribute,value,source`` then one fact per row; values are
  taken as written between the commas (no stripping), as everywhere else.

Every value must be a string that is non-empty after ``strip()`` and at most 200 characters (the
SPEC's limit). A bad row raises :class:`FactError` naming the file and line. The same row twice is
fine; two different values for one pair are allowed too — that is what ``conflict`` reports.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal

from schemas.events import Claim
from schemas.verdicts import ClaimVerdict
from services.evaluation.claims import FACT_KEYS, MAX_VALUE_CHARS, SupportDecision, support_status

__all__ = ["DEFAULT_FACTS_DIR", "FactError", "FactRegistry", "load_facts"]

DEFAULT_FACTS_DIR: Final = Path(__file__).resolve().parents[2] / "rules" / "facts"
_ORDER: Final = ("entity", "attribute", "value", "source")
_EMPTY: Final[Mapping[str, frozenset[str]]] = MappingProxyType({})

Origin = Literal["event", "extracted"]


class FactError(ValueError):
    """A fact file is unreadable or a row is invalid; the message names the file and line."""


def _check_row(where: str, row: Mapping[str, object]) -> tuple[str, str, str, str]:
    if set(row) != FACT_KEYS:
        missing = sorted(FACT_KEYS - set(row))
        extra = sorted(str(k) for k in set(row) - FACT_KEYS)
        raise FactError(
            f"{where}: keys must be exactly {list(_ORDER)}; missing {missing}, unexpected {extra}"
        )
    values: list[str] = []
    for key in _ORDER:
        value = row[key]
        if type(value) is not str:
            raise FactError(f"{where}: {key}: must be a string, got {type(value).__name__}")
        if not value.strip():
            raise FactError(f"{where}: {key}: must not be empty or whitespace-only")
        if len(value) > MAX_VALUE_CHARS:
            raise FactError(
                f"{where}: {key}: at most {MAX_VALUE_CHARS} characters allowed, got {len(value)}"
            )
        values.append(value)
    entity, attribute, value, source = values
    return entity, attribute, value, source


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[str, Mapping[str, object]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FactError(f"{where}: not valid JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise FactError(f"{where}: must be a JSON object, got {type(row).__name__}")
        yield where, row


def _csv_rows(path: Path, text: str) -> Iterator[tuple[str, Mapping[str, object]]]:
    # Comment lines are blanked (not removed) so that reader.line_num stays the file's line.
    kept = "".join(
        "\n" if line.lstrip().startswith("#") else line for line in text.splitlines(True)
    )
    reader = csv.reader(io.StringIO(kept, newline=""), strict=True)
    header: list[str] | None = None
    try:
        for cells in reader:
            where = f"{path}:{reader.line_num}"
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            if header is None:
                if cells != list(_ORDER):
                    raise FactError(f"{where}: the header must be {','.join(_ORDER)}")
                header = cells
                continue
            if len(cells) != len(header):
                raise FactError(f"{where}: expected {len(header)} fields, got {len(cells)}")
            yield where, dict(zip(header, cells, strict=True))
    except csv.Error as exc:
        raise FactError(f"{path}:{reader.line_num}: not valid CSV: {exc}") from None
    if header is None:
        raise FactError(f"{path}: no header row {','.join(_ORDER)}")


def _files(paths: Iterable[Path | str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted([*p.glob("*.jsonl"), *p.glob("*.csv")]))
        elif p.is_file():
            files.append(p)
        else:
            raise FactError(f"{p}: no such fact file or directory")
    return files


def load_facts(paths: Iterable[Path | str]) -> Iterator[tuple[str, str, str, str]]:
    """Yield ``(entity, attribute, value, source)`` from files and folders, validated."""
    for path in _files(paths):
        if path.suffix not in {".jsonl", ".csv"}:
            raise FactError(f"{path}: a fact file is .jsonl or .csv")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FactError(f"{path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise FactError(f"{path}: not UTF-8 (byte {exc.start})") from None
        rows = _jsonl_rows(path, text) if path.suffix == ".jsonl" else _csv_rows(path, text)
        for where, row in rows:
            yield _check_row(where, row)


class FactRegistry:
    """Facts indexed on ``(entity, attribute)`` → ``{value: sources}``; answers like
    :func:`~services.evaluation.claim_support` without its size limits.

    >>> reg = FactRegistry.from_rows([("paracetamol", "max_daily_dose_adult", "4 g", "fk-1")])
    >>> reg.check(Claim(entity="paracetamol", attribute="max_daily_dose_adult", value="4 g"),
    ...           origin="event").status
    'supported'
    """

    def __init__(self) -> None:
        self._index: dict[tuple[str, str], dict[str, set[str]]] = {}
        self._facts = 0
        self._entities: frozenset[str] | None = None

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, str, str]]) -> FactRegistry:
        """A registry from already validated ``(entity, attribute, value, source)`` rows."""
        registry = cls()
        for entity, attribute, value, source in rows:
            sources = registry._index.setdefault((entity, attribute), {}).setdefault(value, set())
            if source not in sources:
                sources.add(source)
                registry._facts += 1
        return registry

    @classmethod
    def from_facts(cls, facts: Iterable[Mapping[str, object]]) -> FactRegistry:
        """A registry from fact dicts (as :func:`claim_support` takes), validated like files."""
        return cls.from_rows(_check_row(f"facts[{i}]", f) for i, f in enumerate(facts))

    @classmethod
    def load(cls, paths: Iterable[Path | str] | Path | str | None = None) -> FactRegistry:
        """Load every ``*.jsonl`` / ``*.csv`` of the given files or folders (default
        ``rules/facts/``); raise :class:`FactError` naming file and line on the first bad row."""
        if paths is None:
            paths = [DEFAULT_FACTS_DIR]
        elif isinstance(paths, str | Path):
            paths = [paths]
        return cls.from_rows(load_facts(paths))

    def __len__(self) -> int:
        """Distinct ``(entity, attribute, value, source)`` facts."""
        return self._facts

    @property
    def pairs(self) -> int:
        return len(self._index)

    @property
    def entities(self) -> frozenset[str]:
        """Every entity, lower-cased (used to recognise drug names in answers)."""
        if self._entities is None:
            self._entities = frozenset(entity.lower() for entity, _ in self._index)
        return self._entities

    def values(self, entity: str, attribute: str) -> Mapping[str, frozenset[str]]:
        """The registered ``{value: sources}`` for the exact pair (empty when there is none)."""
        found = self._index.get((entity, attribute))
        if not found:
            return _EMPTY
        return MappingProxyType({v: frozenset(s) for v, s in found.items()})

    def decide(self, entity: str, attribute: str, value: str) -> SupportDecision:
        """The :func:`support_status` of one claim against this registry."""
        return support_status(self._index.get((entity, attribute), {}), value)

    def check(self, claim: Claim, *, origin: Origin = "event") -> ClaimVerdict:
        decision = self.decide(claim.entity, claim.attribute, claim.value)
        return ClaimVerdict(
            claim=claim,
            status=decision.status,
            sources=list(decision.sources),
            registered=sorted(self._index.get((claim.entity, claim.attribute), {})),
            origin=origin,
        )

    def check_many(
        self, claims: Iterable[Claim], *, origin: Origin = "event"
    ) -> list[ClaimVerdict]:
        return [self.check(claim, origin=origin) for claim in claims]
