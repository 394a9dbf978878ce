"""Vietnamese word segmentation: which way to cut Vietnamese into words (issue 10, item 3).

Run ``.venv/bin/python benchmarks/vi_segmentation.py [--library-python PY]``. Compares, on the
hand-segmented sentences of ``benchmarks/data/vi_segmentation_gold.txt``:

- **syllables**: every syllable a word (what a whitespace split gives);
- **lexicon**: greedy longest match of the medical lexicons' Vietnamese phrases
  (``rules/grounding``) over syllables — what the claim reader does for cues, drugs,
  populations and conditions;
- **pyvi** and **underthesea** (PyPI; both ship their CRF model), run by ``--library-python``,
  an interpreter where they are installed (they are not dependencies of Vigil).

Reports word precision / recall / F1 (a word counts when both its boundaries match the gold
segmentation), the time per sentence, and the import time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLD = ROOT / "benchmarks" / "data" / "vi_segmentation_gold.txt"

_LIBRARY = r"""
import json, sys, time
sentences = json.loads(sys.stdin.read())
out = {}
t = time.perf_counter()
from pyvi import ViTokenizer
out["pyvi_import_s"] = time.perf_counter() - t
ViTokenizer.tokenize(sentences[0])
t = time.process_time()
res = [ViTokenizer.tokenize(s).split() for s in sentences]
out["pyvi"] = {"words": res, "s": time.process_time() - t}
t = time.perf_counter()
from underthesea import word_tokenize
out["underthesea_import_s"] = time.perf_counter() - t
word_tokenize(sentences[0])
t = time.process_time()
res = [[w.replace(" ", "_") for w in word_tokenize(s)] for s in sentences]
out["underthesea"] = {"words": res, "s": time.process_time() - t}
print(json.dumps(out))
"""


def gold() -> list[list[str]]:
    lines = GOLD.read_text(encoding="utf-8").splitlines()
    return [line.split() for line in lines if line.strip() and not line.startswith("#")]


def spans(words: list[str]) -> set[tuple[int, int]]:
    out, pos = set(), 0
    for w in words:
        n = len(w.split("_"))
        out.add((pos, pos + n))
        pos += n
    return out


def lexicon_segment(syllables: list[str]) -> list[str]:
    from services.grounding.medical import load_lexicon

    lex = load_lexicon()
    matcher = lex.matcher("vi")
    low = [s.lower() for s in syllables]
    out: list[str] = []
    i = 0
    while i < len(low):
        hit = matcher.at(low, i)
        drug = lex.drug_at(low, i, len(low))
        k = max(hit[0] if hit else 1, drug[0] if drug else 1)
        out.append("_".join(syllables[i : i + k]))
        i += k
    return out


def score(pred: list[list[str]], ref: list[list[str]]) -> dict[str, float]:
    tp = fp = fn = 0
    for p, r in zip(pred, ref, strict=True):
        ps, rs = spans(p), spans(r)
        tp += len(ps & rs)
        fp += len(ps - rs)
        fn += len(rs - ps)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--library-python", help="interpreter with pyvi and underthesea")
    args = parser.parse_args(argv)
    ref = gold()
    syllables = [[s for w in words for s in w.split("_")] for words in ref]
    texts = [" ".join(s) for s in syllables]
    rows: dict[str, dict[str, float]] = {}
    rows["syllables"] = {**score(syllables, ref), "us_per_sentence": 0.0}
    lexicon_segment(syllables[0])  # load
    t = time.process_time()
    lex = [lexicon_segment(s) for s in syllables]
    rows["lexicon"] = {
        **score(lex, ref),
        "us_per_sentence": 1e6 * (time.process_time() - t) / len(ref),
    }
    if args.library_python:
        done = subprocess.run(
            [args.library_python, "-c", _LIBRARY],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            check=True,
        )
        lib = json.loads(done.stdout.strip().splitlines()[-1])
        for name in ("pyvi", "underthesea"):
            words = lib[name]["words"]
            words = [[w for w in ws if w.strip()] for ws in words]
            rows[name] = {
                **score(words, ref),
                "us_per_sentence": 1e6 * lib[name]["s"] / len(ref),
                "import_s": lib[f"{name}_import_s"],
            }
    print(f"{len(ref)} sentences, {sum(len(r) for r in ref)} gold words")
    print("| segmenter | precision | recall | F1 | µs / sentence | import s |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        imp = f"{r['import_s']:.1f}" if "import_s" in r else "–"
        print(
            f"| {name} | {r['precision']:.2f} | {r['recall']:.2f} | {r['f1']:.2f} | "
            f"{r['us_per_sentence']:.0f} | {imp} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
