#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s10 --demo`. The ids are the ones the
demo store draws (tasks::tools::DEMO_ID_SEED); after changing the seed, run `s10 --demo` once to
see the new ids and pass them: python3 demo/gen_turns.py ID_SCHEMA ID_API ID_TESTS ID_DOCS > demo/turns.jsonl
"""
import json, sys
ids = sys.argv[1:5] if len(sys.argv) > 4 else ["ID0","ID1","ID2","ID3"]
S, A, T, D = ids
n = [0]
def msg(content, stop, inp, out):
    n[0] += 1
    blocks = []
    for b in content:
        if isinstance(b, str):
            blocks.append({"type": "text", "text": b})
        else:
            name, inp_ = b
            blocks.append({"type": "tool_use", "id": "toolu_01S10Demo%02d%s" % (n[0], "x" * 6 + str(len(blocks))), "name": name, "input": inp_})
    return {"id": "msg_demo_s10_%02d" % n[0], "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": inp, "output_tokens": out}}
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
print("\n".join(json.dumps(t, ensure_ascii=False) for t in turns))
