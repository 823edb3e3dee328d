#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s15 --demo`:
python3 demo/gen_turns.py > demo/turns.jsonl

The session: the todo list, a skill, a subagent, the task graph, a background command whose end
wakes the agent for a turn of its own, and memory (extraction after each answer, recall before the
woken turn). Every model call of the run is here, in the order the harness makes them.
"""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tests/support"))
from demo_turns import dump, recorder

msg = recorder("s15")
plan = [
    {"content": "Check the version", "status": "in_progress"},
    {"content": "Run the tests", "status": "pending"},
    {"content": "Write NOTES.md", "status": "pending"},
]
done = [
    {"content": "Check the version", "status": "completed"},
    {"content": "Run the tests", "status": "in_progress"},
    {"content": "Write NOTES.md", "status": "completed"},
]
record = [{
    "name": "release-notes-file",
    "type": "project",
    "scope": "persistent",
    "description": "Release notes go in NOTES.md, one line per change under a ## VERSION heading",
    "body": "This project keeps its release notes in NOTES.md: a \"## VERSION\" heading per release, one line per change, newest first.",
}]
turns = [
    # The user's turn.
    msg(["A release has several steps: I'll plan them, and read how this project writes release notes.",
         ("todo_write", {"todos": plan}),
         ("load_skill", {"name": "release-notes"})], "tool_use", 2900, 120),
    msg(["A subagent can check the version without filling my context.",
         ("task", {"description": "Read app.py and report the VERSION it sets, in one sentence."})], "tool_use", 3200, 60),
    # The subagent's own two calls.
    msg([("read_file", {"path": "app.py"})], "tool_use", 900, 30),
    msg(["app.py sets VERSION = \"1.2\"."], "end_turn", 980, 15),
    msg(["Version 1.2 confirmed. The tests go on the task board and run in the background while I write the notes.",
         ("create_task", {"subject": "Run the test suite", "description": "Before the 1.2 release"}),
         ("bash", {"command": "sleep 0.5; echo '3 passed'", "run_in_background": True})], "tool_use", 3400, 110),
    msg([("write_file", {"path": "NOTES.md", "content": "## 1.2\n\n- greet(name) greets by name\n"}),
         ("todo_write", {"todos": done})], "tool_use", 3600, 120),
    msg(["NOTES.md has the 1.2 entry, in the skill's format. The tests are still running in the background: "
         "their result will wake me when they finish."], "end_turn", 3700, 50),
    # Memory extraction after the answer.
    msg(["```json\n" + json.dumps(record, indent=2) + "\n```"], "end_turn", 900, 120),
    # The background command's end wakes the agent: memory recall first, then the turn.
    msg(["[0]"], "end_turn", 400, 4),
    msg(["The background test run finished: 3 passed. The 1.2 release is ready: version checked, notes written, tests green."],
        "end_turn", 3900, 40),
    msg(["[]"], "end_turn", 700, 2),
]
print(dump(turns))
