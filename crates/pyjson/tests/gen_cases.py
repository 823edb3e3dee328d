#!/usr/bin/env python3
"""Writes tests/cases.jsonl: what CPython's json.dumps and repr give for a table of values. The
crate's tests read it and never run Python. Run once, with the Python the course targets:

    python3 crates/pyjson/tests/gen_cases.py

Each line: {"call": "dumps"|"repr"|"strip", "indent": null|N, "ensure_ascii": bool, "input": V, "expected": S}.
A float inside V is written {"__float__": "repr"} so that the test builds the exact same double
(a JSON reader may round a long decimal differently from CPython).
"""
import json, os, sys

STRINGS = [
    "", "a", "hello world", "it's", 'say "hi"', "both ' and \"", "back\\slash", "\\'", "''\"",
    "'", '"', "tab\there", "line\nbreak", "cr\rlf", "\b", "\f", "\x0b", "\x00", "\x01", "\x1b[31m",
    "\x1f", " ", "~", "\x7f", "\x80", "\x85", "\x9f", "\xa0", "\xad", "\xff", "\u0100", "é", "ü",
    "e\u0301", "Ω", "€", "设计 schema", "日本語のテキスト", "\u0378", "\u1680", "\u2000", "\u200b",
    "\u200f", "\u2028", "\u2029", "\u3000", "\ue000", "\ufeff", "\uffff", "😀", "𝔘𝔫𝔦", "\U0001f600\U0001f601",
    "👨\u200d👩\u200d👧", "🇯🇵", "\U000e0001", "\U0010ffff", "\U000f0000", "مرحبا", "שלום",
    "mixed: ascii, é, 设计, 😀, \x00 and \t", "task_0c301f08", "../outside", "rm -rf /tmp/x",
]

INTS = [0, 1, -1, 42, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -2**63, 2**64 - 1, 10**18]
FLOATS = [0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 0.1, 0.1 + 0.2, 2 / 3, 3.14159, 100.0, 12345.678,
          1e15, 1e16, 123456789012345678.0, 9007199254740993.0, 1e-4, 1e-5, 1.5e-5, 0.00012345,
          1e22, 1e100, 1e300, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 1e-7,
          123.456e10, 0.5, 1 / 3]

TASK = {"id": "task_0c301f08", "subject": "设计 schema", "description": "d", "status": "completed",
        "owner": "agent", "blockedBy": []}
STRUCTURES = [
    {}, [], [[]], [{}], {"a": []}, {"a": {}}, [1, [2, [3, []]]], {"a": {"b": {"c": None}}},
    [None, True, False], {"none": None, "t": True, "f": False}, TASK,
    dict(TASK, status="pending", owner=None, blockedBy=["task_deadbeef", "task_cafebabe"]),
    {"command": "x"}, {"command": "rm x", "path": "it's"}, ["task_x"], ["a", "b"],
    {"z": 1, "a": 2, "m": 3}, {"key with \"quotes\"": "value\nwith\nlines", "é": "😀"},
    [1, 2.5, -0.0, 1e16, "s", None], {"nested": [{"x": [1, {"y": []}]}, {}], "empty": ""},
    {"type": "message", "from": "lead", "content": "设计", "timestamp": 1723456789.123},
    [[[[]]]], {"": ""}, ["", [], {}],
]


def tag(v):
    if isinstance(v, float):
        return {"__float__": repr(v)}
    if isinstance(v, list):
        return [tag(x) for x in v]
    if isinstance(v, dict):
        return {k: tag(x) for k, x in v.items()}
    return v


cases = []


def add(call, value, indent=None, ensure_ascii=True):
    if call == "repr":
        expected = repr(value)
    elif call == "strip":
        expected = value.strip()
    else:
        expected = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)
    cases.append({"call": call, "indent": indent, "ensure_ascii": ensure_ascii, "input": tag(value),
                  "expected": expected})


for s in STRINGS:
    add("dumps", s)
    add("dumps", s, ensure_ascii=False)
    add("repr", s)
    add("repr", [s])
WHITE = [" x ", "\t\n x \r\n", "\x1c\x1d x \x1e\x1f", "\x85\xa0x\u3000", "\u2000\u200a x \u2028\u2029",
         "\u202f\u205f x", "\u200b x \u200b", "\ufeff x", "\x0b\x0c x", "   ", "", "\u1680 设计 \u180e"]
for s in STRINGS + WHITE:
    add("strip", s)
for n in INTS + FLOATS:
    add("dumps", n)
    add("repr", n)
for v in STRUCTURES:
    add("dumps", v)
    add("dumps", v, indent=2)
    add("dumps", v, indent=0)
    add("dumps", v, indent=4, ensure_ascii=False)
    add("repr", v)

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.jsonl")
with open(out, "w") as f:
    f.write("".join(json.dumps(c) + "\n" for c in cases))
print(len(cases), "cases from Python", sys.version.split()[0])
