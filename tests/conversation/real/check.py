#!/usr/bin/env python3
"""Validate the labelled corpus files in this folder and print counts.

Standard library only. Usage: python3 check.py [file.jsonl ...]
(defaults to every *.jsonl file next to this script). Exit code 1 on any error.
"""
import collections
import glob
import json
import os
import sys

ACTS = {"done", "proposed", "asked", "refused", "informed", "transfer", "small_talk"}
POLARITIES = {"affirmed", "negated", "counterfactual"}
VERBS = {"cancel", "book", "refund", "modify", "exchange", "return", "update",
         "upgrade", "transfer", "other"}
VERB_ACTS = {"done", "proposed", "refused"}
KEYS = {"id", "source", "text", "claims"}


def check_file(path, errors, totals, seen_ids, seen_texts):
    per_act = collections.Counter()
    n_msgs = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            where = f"{os.path.basename(path)}:{lineno}"
            if not line.strip():
                errors.append(f"{where}: empty line")
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"{where}: not JSON: {e}")
                continue
            if not isinstance(rec, dict) or set(rec) != KEYS:
                errors.append(f"{where}: keys must be exactly {sorted(KEYS)}")
                continue
            for k in ("id", "source", "text"):
                if not isinstance(rec[k], str) or not rec[k].strip():
                    errors.append(f"{where}: {k} must be a non-empty string")
            if rec["id"] in seen_ids:
                errors.append(f"{where}: duplicate id {rec['id']}")
            seen_ids.add(rec["id"])
            if rec["text"] in seen_texts:
                errors.append(f"{where}: duplicate text (also {seen_texts[rec['text']]})")
            seen_texts.setdefault(rec["text"], rec["id"])
            claims = rec["claims"]
            if not isinstance(claims, list) or not claims:
                errors.append(f"{where}: claims must be a non-empty list")
                continue
            n_msgs += 1
            for i, c in enumerate(claims):
                cw = f"{where} claim {i}"
                if not isinstance(c, dict):
                    errors.append(f"{cw}: not an object")
                    continue
                act = c.get("act")
                want = {"act", "polarity", "hedged", "values"} | ({"verb"} if act in VERB_ACTS else set())
                if set(c) != want:
                    errors.append(f"{cw}: keys {sorted(c)} != {sorted(want)}")
                if act not in ACTS:
                    errors.append(f"{cw}: bad act {act!r}")
                if c.get("polarity") not in POLARITIES:
                    errors.append(f"{cw}: bad polarity {c.get('polarity')!r}")
                if not isinstance(c.get("hedged"), bool):
                    errors.append(f"{cw}: hedged must be true/false")
                vals = c.get("values")
                if not isinstance(vals, list) or not all(isinstance(v, str) and v for v in vals):
                    errors.append(f"{cw}: values must be a list of non-empty strings")
                else:
                    for v in vals:
                        if v not in rec["text"]:
                            errors.append(f"{cw}: value {v!r} does not occur in the text")
                if act in VERB_ACTS and c.get("verb") not in VERBS:
                    errors.append(f"{cw}: bad verb {c.get('verb')!r}")
                per_act[act] += 1
                totals["act"][act] += 1
                totals["polarity"][c.get("polarity")] += 1
                totals["hedged"][bool(c.get("hedged"))] += 1
                if act in VERB_ACTS:
                    totals["verb"][f"{act}/{c.get('verb')}"] += 1
    totals["messages"] += n_msgs
    print(f"{os.path.basename(path)}: {n_msgs} messages, {sum(per_act.values())} claims")
    for a in sorted(per_act):
        print(f"  {a:12s} {per_act[a]}")


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    files = argv[1:] or sorted(glob.glob(os.path.join(here, "*.jsonl")))
    errors = []
    totals = {"messages": 0, "act": collections.Counter(), "polarity": collections.Counter(),
              "hedged": collections.Counter(), "verb": collections.Counter()}
    seen_ids, seen_texts = set(), {}
    for p in files:
        check_file(p, errors, totals, seen_ids, seen_texts)
    print(f"TOTAL: {totals['messages']} messages, {sum(totals['act'].values())} claims")
    for name in ("act", "polarity", "hedged", "verb"):
        print(f"  by {name}: " + ", ".join(f"{k}={v}" for k, v in sorted(totals[name].items(), key=lambda kv: str(kv[0]))))
    for e in errors[:50]:
        print("ERROR", e)
    if errors:
        print(f"{len(errors)} error(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
