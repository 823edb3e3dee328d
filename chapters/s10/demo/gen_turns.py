#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s10 --demo`. The ids are the ones the
demo store draws (tasks::tools::DEMO_ID_SEED); after changing the seed, run `s10 --demo` once to
see the new ids and pass them: python3 demo/gen_turns.py ID_SCHEMA ID_API ID_TESTS ID_DOCS > demo/turns.jsonl
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tests/support"))
from demo_turns import dump, recorder

ids = sys.argv[1:5] if len(sys.argv) > 4 else ["ID0","ID1","ID2","ID3"]
S, A, T, D = ids
msg = recorder("s10")
turns = [
  msg(["I'll put the four pieces of work on the task board first. Their ids are made by the store, so I'll add the dependencies once they come back.",
       ("create_task", {"subject": "Design the schema", "description": "Tables, keys and constraints for the release."}),
       ("create_task", {"subject": "Write the API", "description": "Endpoints over the schema."}),
       ("create_task", {"subject": "Write the tests", "description": "Cover every endpoint."}),
       ("create_task", {"subject": "Write the docs"})], "tool_use", 1850, 260),
  msg(["Now the edges, with the ids that came back: the API needs the schema, the tests need the API.",
       ("update_task", {"task_id": A, "addBlockedBy": [S]}),
       ("update_task", {"task_id": T, "addBlockedBy": [A]})], "tool_use", 2240, 150),
  msg([("list_tasks", {}), ("claim_task", {"task_id": T})], "tool_use", 2460, 70),
  msg(["The tests are blocked by the API, as they should be. The schema has no dependencies: I'll take it.",
       ("claim_task", {"task_id": S})], "tool_use", 2640, 60),
  msg(["Schema designed: users(id, email, created_at), releases(id, name, user_id -> users.id). Marking it complete.",
       ("complete_task", {"task_id": S})], "tool_use", 2760, 70),
  msg([("list_tasks", {})], "tool_use", 2880, 30),
  msg(["The schema is done, and completing it unblocked the API. The board now:\n\n- [x] Design the schema\n- [ ] Write the API (ready: its dependency is completed)\n- [ ] Write the tests (waits for the API)\n- [ ] Write the docs (no dependencies, ready any time)\n\nNext I would claim the API. The tasks are files in .tasks/, so a later session sees the same board."],
      "end_turn", 3050, 120),
]
print(dump(turns))
