#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s08 --demo`: python3 demo/gen_turns.py > demo/turns.jsonl

The demo runs with the lowered limits of chapters/s08/src/main.rs (DEMO_LIMITS), and the turns are
sized so that each of compaction's seven ways acts once, in the course's order of cost: the result
budget (one `cat` of every log), micro-compaction and the snip (a long read), the `compact` tool
(the model ends the reading phase), fit and the automatic summary (the report written), and
reactive compaction (an error answer "prompt is too long", as an endpoint gives it). The turns a
summary consumes are the model's summaries. The report's text is built from the logs themselves.
"""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../../tests/support"))
from demo_turns import dump, recorder

msg = recorder("s08")

# The ERROR lines of the seeded logs: (time, server, component, what), and the two lines before
# each, which the report quotes.
ERRORS, BEFORE = [], {}
for path in sorted(glob.glob(os.path.join(HERE, "logs", "*.log"))):
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(\S+) (\S+) ERROR \[(\w+)\] (.*)", line)
        if m:
            ERRORS.append(m.groups())
            BEFORE[m.groups()] = lines[max(0, i - 2):i + 1]


def kind(what):
    """The error's kind: its text without the numbers and ids that vary."""
    what = re.sub(r"^job \S+ failed: ", "", what)
    what = re.sub(r"invoice-\d+\.pdf", "an invoice PDF", what)
    return re.sub(r"\d+", "N", what)


KINDS = {}
for t, server, component, what in ERRORS:
    KINDS.setdefault(kind(what), []).append((t, server, component, what))
KINDS = sorted(KINDS.items(), key=lambda kv: kv[1][0][0])


def section(name, hits):
    servers = sorted({s for _, s, _, _ in hits})
    lines = "\n\n".join("    %s, around %s:\n%s" % (h[1], h[0][11:19], "\n".join("        " + l for l in BEFORE[h]))
                        for h in hits)
    return ("## %s\n\n- Occurrences: %d on %s\n- First seen: %s; last seen: %s\n- Component: %s\n\n"
            "Log lines:\n\n%s\n\n- Impact: requests on these servers failed or were delayed while it lasted.\n"
            "- Follow-up: find why it started at %s and add an alert on it.\n\n"
            % (name, len(hits), ", ".join(servers), hits[0][0], hits[-1][0], hits[0][2], lines, hits[0][0][11:16]))


half = len(KINDS) // 2
FIRST = ("# Incident report: 2026-11-03, 02:05-02:25 UTC\n\nTwelve servers logged %d errors of %d kinds in "
         "twenty minutes. One section per kind, in the order each first appeared.\n\n" % (len(ERRORS), len(KINDS))
         + "".join(section(k, h) for k, h in KINDS[:half]) + "<!-- more -->\n")
SECOND = "".join(section(k, h) for k, h in KINDS[half:]) + "<!-- more -->\n"
TIMELINE = ("## Timeline\n\n| time (UTC) | server | error |\n|---|---|---|\n"
            + "".join("| %s | %s | %s |\n" % (t[11:19], s, w) for t, s, _, w in sorted(ERRORS))
            + "\n")

SUMMARY = ("Goal: an incident report in report.md covering every log in logs/ (server-01 to server-12, "
           "2026-11-03 02:05-02:25 UTC).\nDone: %s\nFiles: logs/*.log (read only), report.md.\nRemaining: %s")

turns = [
    msg(["Twelve logs: all of them at once, and their ERROR lines.", ("bash", {"command": "cat logs/*.log"}),
         ("bash", {"command": "grep -h ERROR logs/*.log"})], "tool_use", 1400, 90),
    msg(["%d errors of %d kinds. The server with the earliest error, in full, for context." % (len(ERRORS), len(KINDS)),
         ("read_file", {"path": "logs/server-02.log"})], "tool_use", 4300, 40),
    msg([("bash", {"command": "grep -l ERROR logs/*.log | wc -l"})], "tool_use", 5400, 40),
    msg(["All twelve servers have errors. The next earliest, in full.",
         ("read_file", {"path": "logs/server-05.log"})], "tool_use", 4600, 40),
    msg(["And the warnings, for the impact sections.", ("bash", {"command": "grep -h WARN logs/*.log | wc -l"})],
        "tool_use", 3600, 40),
    msg(["Reading is done; I'll compact before writing, so the report starts from a short history.",
         ("compact", {})], "tool_use", 3900, 40),
    # The summary the compact tool asked for.
    msg([SUMMARY % ("every log read; %d ERROR lines of %d kinds, listed with grep; the first errors at 02:05-02:08 "
                    "on server-02 and server-05." % (len(ERRORS), len(KINDS)),
                    "write report.md: one section per kind, then a timeline.")], "end_turn", 9000, 300),
    msg(["Writing the report: the first %d kinds." % half, ("write_file", {"path": "report.md", "content": FIRST})],
        "tool_use", 1500, 3000),
    msg(["The other %d kinds." % (len(KINDS) - half),
         ("edit_file", {"path": "report.md", "old_text": "<!-- more -->\n", "new_text": SECOND})],
        "tool_use", 5200, 3000),
    # The automatic summary, before the next request.
    msg([SUMMARY % ("report.md has a section for each of the %d kinds and ends with the marker <!-- more -->."
                    % len(KINDS), "replace the marker with a timeline of the errors; check the report.")],
        "end_turn", 12000, 300),
    msg(["Continuing from the summary: the timeline.",
         ("edit_file", {"path": "report.md", "old_text": "<!-- more -->\n", "new_text": TIMELINE})],
        "tool_use", 1900, 2000),
    msg(["Checking the whole report once more.", ("read_file", {"path": "report.md"})], "tool_use", 4000, 40),
    # The endpoint counts tokens its own way: the request is too long for it.
    {"type": "error", "status": 400,
     "error": {"type": "invalid_request_error", "message": "prompt is too long: 204612 tokens > 200000 maximum"}},
    # The reactive summary; then the same request once more.
    msg([SUMMARY % ("report.md is complete: %d sections and a timeline of %d errors." % (len(KINDS), len(ERRORS)),
                    "check the section count and report back.")], "end_turn", 9000, 200),
    msg([("bash", {"command": "grep -c '^## ' report.md && wc -l report.md"})], "tool_use", 2400, 40),
    msg(["The report is in report.md: %d error kinds from 12 servers (%d errors between 02:05 and 02:25 UTC), "
         "each with its log lines, impact and a follow-up, then a timeline." % (len(KINDS), len(ERRORS))],
        "end_turn", 2600, 80),
]
print(dump(turns))
