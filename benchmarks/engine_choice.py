"""Which regex engine may screen hostile chat text? Measure, on the same patterns and inputs.

Candidates: Python ``re`` (backtracking), google-re2 one pattern at a time, google-re2 ``Set``
prefilter + per-pattern search on the hits (what ``RuleEngine`` does), Hyperscan as the
prefilter (when installed), and the product's ``RuleEngine.scan`` (prefilter + search +
validators + context + prompt overlap). Inputs are long runs of near-matches, 4 KiB to 1 MiB;
a linear engine shows a constant cost per KiB. The 1 MiB runs call the engines directly:
``ChatEvent`` rejects content over 64 KiB by default.

    python benchmarks/engine_choice.py [--rules PATH] [--quick]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import re2

KIB = 1024
SIZES_FULL = [4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1024 * KIB]
SIZES_QUICK = [4 * KIB, 64 * KIB, 1024 * KIB]
#: A cell of the time/size table is not run when its projected time exceeds this (full / quick).
CELL_CAP_SECONDS = 20.0
CELL_CAP_SECONDS_QUICK = 4.0


# --------------------------------------------------------------------------- adversarial inputs


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _noise(alphabet: str, size: int, seed: int = 11) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices(alphabet, k=size))


#: name → (description, generator of exactly ``size`` ASCII characters)
INPUTS: dict[str, tuple[str, Callable[[int], str]]] = {
    "a_run_at": ("'aaaa…a@' (one local part, no domain)", lambda n: "a" * (n - 1) + "@"),
    "email_dots": ("'a.a.a.a.' repeated (email-ish, no @)", lambda n: _repeat("a.a.", n)),
    "digits_no_luhn": (
        "'1234 5678 1234 5678 ' repeated (card-shaped, fails Luhn)",
        lambda n: _repeat("1234 5678 1234 5678 ", n),
    ),
    "pem_begin": ("'-----BEGIN ' repeated", lambda n: _repeat("-----BEGIN ", n)),
    "ghp_prefix": ("'ghp_' repeated (token prefix, no body)", lambda n: _repeat("ghp_", n)),
    "digit_noise": (
        "random digits and ' -.' separators (worst case found for the RE2 Set DFA)",
        lambda n: _noise("0123456789 -.", n),
    ),
    "dense_emails": (
        "'a@b.nl ' repeated (a real match every 7 bytes: cost per match)",
        lambda n: _repeat("a@b.nl ", n),
    ),
}


# --------------------------------------------------------------------------- engines


@dataclass
class Patterns:
    regexes: list[str]
    re2: list[Any]
    py: list[re.Pattern[str] | None]
    py_skipped: int


def load_patterns(rules: C.RulesChoice) -> tuple[Patterns, Any]:
    from services.rules import RuleEngine, load_packs, load_prompt_registry

    packs = load_packs([rules.path])
    engine = RuleEngine(packs, load_prompt_registry(C.DEFAULT_PROMPTS))
    regexes = [m.pattern.regex for m in engine._matchers]
    py: list[re.Pattern[str] | None] = []
    for rx in regexes:
        try:
            py.append(re.compile(rx.replace(r"\z", r"\Z")))
        except re.error:
            py.append(None)  # RE2-only syntax such as \pL
    return (
        Patterns(regexes, [re2.compile(r) for r in regexes], py, sum(p is None for p in py)),
        engine,
    )


def py_re_all(p: Patterns, text: str) -> int:
    return sum(1 for rx in p.py if rx is not None for _ in rx.finditer(text))


def re2_per_pattern(p: Patterns, text: str) -> int:
    data = text.encode("utf-8")
    return sum(1 for rx in p.re2 for _ in rx.finditer(data))


class Re2SetPrefilter:
    def __init__(self, p: Patterns, max_mem: int | None = None) -> None:
        opts = re2.Options()
        if max_mem:
            opts.max_mem = max_mem
        self.set = re2.Set.SearchSet(opts)
        for rx in p.regexes:
            self.set.Add(rx)
        self.set.Compile()
        self.p = p

    def hits(self, text: str) -> list[int]:
        return sorted(self.set.Match(text) or [])

    def __call__(self, text: str) -> int:
        data = text.encode("utf-8")
        return sum(1 for i in self.set.Match(data) or () for _ in self.p.re2[i].finditer(data))


class HyperscanPrefilter:
    """Hyperscan block mode as the prefilter: which patterns can match (a superset), then RE2
    finds the spans. Patterns Hyperscan cannot compile exactly are added in PREFILTER mode (it
    may over-report, never under-report); ones it rejects entirely always go to RE2."""

    def __init__(self, p: Patterns) -> None:
        import hyperscan

        self.p = p
        base = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY
        exprs, ids, flags = [], [], []
        self.exact, self.prefilter, self.always = 0, 0, []
        for i, rx in enumerate(p.regexes):
            for extra in (0, hyperscan.HS_FLAG_PREFILTER):
                try:
                    db = hyperscan.Database()
                    db.compile(expressions=[rx.encode()], ids=[i], flags=[base | extra])
                except hyperscan.error:
                    continue
                exprs.append(rx.encode())
                ids.append(i)
                flags.append(base | extra)
                if extra:
                    self.prefilter += 1
                else:
                    self.exact += 1
                break
            else:
                self.always.append(i)
        self.db = hyperscan.Database()
        self.db.compile(expressions=exprs, ids=ids, flags=flags)
        self.scratch = hyperscan.Scratch(self.db)
        self.db.scratch = self.scratch

    def hits(self, text: str) -> list[int]:
        found: set[int] = set(self.always)

        def on_match(idx: int, start: int, end: int, flags: int, ctx: object) -> int:
            found.add(idx)
            return 0

        self.db.scan(text.encode("utf-8"), match_event_handler=on_match)
        return sorted(found)

    def __call__(self, text: str) -> int:
        data = text.encode("utf-8")
        return sum(1 for i in self.hits(text) for _ in self.p.re2[i].finditer(data))


def try_hyperscan(p: Patterns) -> tuple[HyperscanPrefilter | None, str]:
    try:
        import hyperscan  # noqa: F401
    except ImportError as exc:
        return None, f"not installed ({exc}); `pip install hyperscan` in the venv to include it"
    try:
        hs = HyperscanPrefilter(p)
    except Exception as exc:
        return None, f"failed to build the database: {exc}"
    note = f"{hs.exact} patterns exact, {hs.prefilter} in PREFILTER mode"
    if hs.always:
        note += f", {len(hs.always)} rejected (always searched with RE2)"
    return hs, note


# --------------------------------------------------------------------------- Python re blow-up

_BLOWUP = {
    "email_unbounded": (
        r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}",
        "the textbook email regex, unanchored, on 'aaaa…' (no @): O(n²) backtracking",
    ),
    "nested_quantifier": (
        r"^(\w+\s?)*$",
        "nested quantifier on 'aaaa…a!': O(2ⁿ) backtracking",
    ),
}


def _time_in_child(pattern: str, engine: str, text_expr: str, timeout: float) -> float | None:
    """Seconds for one search of ``pattern`` in ``eval(text_expr)`` in a fresh interpreter (so a
    catastrophic case can be abandoned), or None on timeout."""
    code = (
        f"import time, {engine} as E\n"
        f"rx = E.compile({pattern!r}); t = {text_expr}\n"
        "t0 = time.perf_counter(); rx.search(t); print(time.perf_counter() - t0)\n"
    )
    try:
        res = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(res.stdout.strip().splitlines()[-1])


def blowup(quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pat, why = _BLOWUP["email_unbounded"]
    rows = []
    sizes = SIZES_QUICK if quick else SIZES_FULL
    prev: tuple[int, float] | None = None
    for n in sizes:
        projected = None if prev is None else prev[1] * (n / prev[0]) ** 2
        if projected is not None and projected > 60:
            py_t: float | None = None
        else:
            py_t = _time_in_child(pat, "re", f"'a' * {n}", timeout=120)
        if py_t is not None:
            prev = (n, py_t)
        r2 = _time_in_child(pat, "re2", f"'a' * {n}", timeout=120)
        rows.append({"size": n, "python_re_s": py_t, "projected_s": projected, "re2_s": r2})
    out["email_unbounded"] = {"pattern": pat, "what": why, "rows": rows}

    pat, why = _BLOWUP["nested_quantifier"]
    rows = []
    for n in [16, 20, 24] if quick else [16, 18, 20, 22, 24, 26]:
        expr = f"'a' * {n} + '!'"
        py_t = _time_in_child(pat, "re", expr, timeout=30)
        r2 = _time_in_child(pat, "re2", expr, timeout=30)
        rows.append({"chars": n + 1, "python_re_s": py_t, "re2_s": r2})
        if py_t is None:
            break
    out["nested_quantifier"] = {"pattern": pat, "what": why, "rows": rows}
    return out


# --------------------------------------------------------------------------- main


def _measure(fn: Callable[[str], Any], text: str, repeat: int) -> float:
    best, _, _ = C.best_of(lambda: fn(text), repeat)
    return best


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rules", help="pack folder or file (default: the Settings default)")
    ap.add_argument("--quick", action="store_true", help="sizes 4 KiB, 64 KiB, 1 MiB only")
    ap.add_argument("--no-pin", action="store_true", help="do not pin to CPU 0")
    args = ap.parse_args(argv)
    pinned = False if args.no_pin else C.pin_to_one_core(0)
    rules = C.resolve_rules(args.rules)
    pats, engine = load_patterns(rules)
    sizes = SIZES_QUICK if args.quick else SIZES_FULL
    print(f"# Engine choice — {len(pats.regexes)} patterns from {rules.source}: {rules.files}")
    print(f"pinned to one core: {pinned}; Python re cannot compile {pats.py_skipped} of them\n")

    hs, hs_note = try_hyperscan(pats)
    print(f"Hyperscan: {hs_note}\n")
    rset = Re2SetPrefilter(pats)

    engines: dict[str, Callable[[str], Any]] = {
        "python re, per pattern": lambda t: py_re_all(pats, t),
        "re2, per pattern": lambda t: re2_per_pattern(pats, t),
        "re2 Set + per-pattern on hits": rset,
    }
    if hs is not None:
        engines["hyperscan prefilter + re2 on hits"] = hs
    engines["RuleEngine.scan (product)"] = lambda t: engine.scan(t, "assistant", "en")

    # 1) Python re blow-up on classic patterns
    print("## Backtracking blow-up (Python re) vs RE2, same pattern, same input\n")
    bl = blowup(args.quick)
    rows = []
    for r in bl["email_unbounded"]["rows"]:
        py = (
            f"{r['python_re_s']:.3f}"
            if r["python_re_s"] is not None
            else f"not run (≈{r['projected_s']:.0f} projected)"
        )
        rows.append([f"{r['size'] // KIB} KiB", py, f"{r['re2_s'] * 1e3:.3f} ms"])
    print(f"`{bl['email_unbounded']['pattern']}` — {bl['email_unbounded']['what']}\n")
    print(C.md_table(["input", "Python re (s)", "RE2"], rows) + "\n")
    rows = []
    for r in bl["nested_quantifier"]["rows"]:
        py = f"{r['python_re_s']:.3f}" if r["python_re_s"] is not None else "> 30 (killed)"
        rows.append([f"{r['chars']} chars", py, f"{(r['re2_s'] or 0) * 1e6:.1f} µs"])
    print(f"`{bl['nested_quantifier']['pattern']}` — {bl['nested_quantifier']['what']}\n")
    print(C.md_table(["input", "Python re (s)", "RE2"], rows) + "\n")

    # 2) time vs size on the pack's patterns
    print("## Time vs size on the pack's patterns (µs per KiB; constant = linear)\n")
    table: dict[str, Any] = {}
    agreement: dict[str, Any] = {}
    for name, (desc, gen) in INPUTS.items():
        table[name] = {"description": desc, "engines": {}}
        texts = {n: gen(n) for n in sizes}
        big = texts[sizes[-1]]
        per = sorted(i for i, rx in enumerate(pats.re2) if rx.search(big) is not None)
        agree = {"per_pattern": per, "re2_set": rset.hits(big)}
        if hs is not None:
            agree["hyperscan"] = hs.hits(big)
        agreement[name] = {
            "set_equals_per_pattern": agree["re2_set"] == per,
            "hyperscan_superset": None if hs is None else set(per) <= set(agree["hyperscan"]),
            **agree,
        }
        for ename, fn in engines.items():
            cells = []
            prev: tuple[int, float] | None = None
            for n in sizes:
                if prev is not None:
                    # project with the worse of linear and quadratic growth for slow engines
                    scale = n / prev[0]
                    proj = prev[1] * (scale**2 if ename.startswith("python") else scale)
                    if proj > (CELL_CAP_SECONDS_QUICK if args.quick else CELL_CAP_SECONDS):
                        cells.append({"size": n, "seconds": None, "projected_s": proj})
                        prev = (n, proj)
                        continue
                large = n > 64 * KIB
                repeat = 1 if large and (args.quick or ename.startswith("python")) else 3
                t = _measure(fn, texts[n], repeat)
                cells.append({"size": n, "seconds": t, "us_per_kib": t * 1e6 / (n / KIB)})
                prev = (n, t)
            table[name]["engines"][ename] = cells
        print(f"### {name}: {desc}\n")
        rows = []
        for ename, cells in table[name]["engines"].items():
            vals = [c.get("us_per_kib") for c in cells]
            shown = [
                f"{v:.1f}" if v is not None else f"skipped (≈{c['projected_s']:.0f} s)"
                for v, c in zip(vals, cells, strict=True)
            ]
            measured = [v for v, c in zip(vals, cells, strict=True) if v and c["size"] >= 16 * KIB]
            ratio = f"{max(measured) / min(measured):.2f}" if len(measured) >= 2 else "—"
            rows.append([ename, *shown, ratio])
        heads = ["engine", *(f"{n // KIB} KiB" for n in sizes), "max/min ≥16 KiB"]
        print(C.md_table(heads, rows))
        a = agreement[name]
        print(
            f"\nSet prefilter agrees with per-pattern search: {a['set_equals_per_pattern']}"
            + (
                ""
                if hs is None
                else f"; Hyperscan hits ⊇ per-pattern hits: {a['hyperscan_superset']}"
            )
            + "\n"
        )

    # 3) ordinary traffic, 1 KiB messages
    print("## Ordinary 1 KiB chat messages (µs per message)\n")
    rng = random.Random(3)
    msgs = [C.make_content(rng, KIB, lang, "assistant") for lang in ["en", "nl", "vi"] * 300]
    typical = {}
    for ename, fn in engines.items():
        best, _, _ = C.best_of(lambda fn=fn: [fn(m) for m in msgs], 3)
        typical[ename] = best / len(msgs) * 1e6
    print(
        C.md_table(["engine", "µs / 1 KiB message"], [[k, f"{v:.1f}"] for k, v in typical.items()])
    )

    # 4) RE2 Set DFA memory budget on the worst input found
    print("\n## RE2 Set: DFA memory budget vs the digit-noise input (warm cache, µs per KiB)\n")
    budget = []
    for mb in (8, 64) if args.quick else (8, 16, 32, 64):
        s = Re2SetPrefilter(pats, max_mem=mb << 20)
        row: dict[str, Any] = {"max_mem_mib": mb}
        for n in (64 * KIB, 1024 * KIB):
            noise = INPUTS["digit_noise"][1](n).encode("utf-8")
            s.set.Match(noise)  # warm the DFA cache, as a long-lived engine's is
            t0 = time.process_time()
            s.set.Match(noise)
            row[f"us_per_kib_{n // KIB}k"] = (time.process_time() - t0) * 1e6 / (n / KIB)
        budget.append(row)
    print(
        C.md_table(
            ["Set max_mem", "64 KiB", "1 MiB"],
            [
                [
                    f"{b['max_mem_mib']} MiB",
                    f"{b['us_per_kib_64k']:.1f}",
                    f"{b['us_per_kib_1024k']:.1f}",
                ]
                for b in budget
            ],
        )
    )

    result = {
        "pinned_one_core": pinned,
        "patterns": len(pats.regexes),
        "python_re_uncompilable": pats.py_skipped,
        "hyperscan": hs_note,
        "sizes": sizes,
        "blowup": bl,
        "time_vs_size": table,
        "prefilter_agreement": agreement,
        "typical_1kib_us": typical,
        "re2_set_max_mem": budget,
    }
    path = C.save_result("engine_choice" + ("_quick" if args.quick else ""), result, rules)
    print(f"\nraw results: {path.relative_to(C.REPO_ROOT)}")
    return result


if __name__ == "__main__":
    main()
