#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s16 --demo`: one Workflow call that runs
`review-changes` (whose agents the demo answers with the deterministic runner, as `s16 demo`
does), then the answer. python3 demo/gen_turns.py > demo/turns.jsonl
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tests/support"))
from demo_turns import dump, recorder

CHANGES = (
    "def load_user(user_id):\n"
    "    query = f\"SELECT * FROM users WHERE id = {user_id}\"\n"
    "    return db.execute(query).fetchone()\n"
)
msg = recorder("s16")
turns = [
  msg(["I'll run the saved review workflow on that change: it audits four dimensions at once and has every finding verified by a separate agent.",
       ("Workflow", {"name": "review-changes", "args": {"changes": CHANGES}})], "tool_use", 2150, 140),
  msg(["The review-changes workflow finished (11 agent calls, 883 tokens) and confirmed 6 findings, none high:\n\n"
       "- medium, performance: audit:performance #1 and #2\n"
       "- medium, style: audit:style #1 and #2\n"
       "- low, security: audit:security #1 and #2\n\n"
       "The correctness finding did not survive verification. The run's journal is in .runtime/, so running it again "
       "with resume_from_run_id would answer every step from the journal."],
      "end_turn", 3400, 120),
  # Memory extraction after the answer (the s15 host's): nothing worth keeping.
  msg(["[]"], "end_turn", 700, 2),
]
print(dump(turns))
