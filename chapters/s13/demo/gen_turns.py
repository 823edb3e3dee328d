#!/usr/bin/env python3
"""Writes the recorded model turns of `s13 --demo`: demo/turns.jsonl (the Lead's), demo/alice.jsonl and
demo/bob.jsonl (each teammate replays its own, since concurrent agents ask in no fixed order).

The ids are the ones the demo draws: tasks from s10's seed (tasks::tools::DEMO_ID_SEED), the plan's request
id from team::runtime::DEMO_REQUEST_SEED. After changing a seed, run `s13 --demo` once to see the new ids and
pass them: python3 demo/gen_turns.py ID_MODULE ID_TEST ID_DOCS REQUEST_ID
The story is causal, so each Lead wake sees the same events every run: alice's plan waits for the review; bob
starts only once alice's second task is done; the shutdowns go one at a time.
"""
import os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../../tests/support"))
from demo_turns import dump, recorder

M, T, D, REQ = sys.argv[1:5] if len(sys.argv) > 4 else ["task_d12b78f5", "task_543ebdb8", "task_b8f37b41", "req_000000"]

lead = recorder("s13")
lead_turns = [
  lead(["Three tasks: the module, its test (needs the module) and the README section (needs the test). Nodes first; their ids come back from the store.",
        ("create_task", {"subject": "Write the greeting module", "description": "greet.py with greet(name) -> 'Hello, {name}!'"}),
        ("create_task", {"subject": "Test the greeting", "description": "test_greet.py with a unittest for greet()"}),
        ("create_task", {"subject": "Document the greeting", "description": "A README.md section on greet()"})], "tool_use", 2900, 210),
  lead(["Now the edges, with the returned ids.",
        ("update_task", {"task_id": T, "addBlockedBy": [M]}),
        ("update_task", {"task_id": D, "addBlockedBy": [T]})], "tool_use", 3300, 120),
  lead(["As agreed: alice writes code, so her plan comes first.",
        ("spawn_teammate", {"name": "alice", "role": "Python developer", "prompt": "Write the module the task describes. Keep it small.",
                            "task_id": M, "require_plan": True})], "tool_use", 3500, 110),
  lead(["alice is on the module and will send her plan first. The test unblocks once the module is done; I'll hand the README to a second teammate when its turn comes."], "end_turn", 3700, 50),
  # Wake: alice's plan_approval_request.
  lead([("review_plan", {"request_id": REQ, "approve": True, "feedback": "Approved: go ahead."})], "tool_use", 3900, 40),
  lead(["Plan approved; alice can change the workspace now."], "end_turn", 4000, 20),
  # Wake: alice's result and idle_notification.
  lead(["The module is done, which unblocks the test. alice is idle and will claim it herself."], "end_turn", 4200, 30),
  # Wake: alice's second result and idle_notification.
  lead(["Tested. The README section is ready: bob takes it.",
        ("spawn_teammate", {"name": "bob", "role": "technical writer", "prompt": "Document greet() in README.md.", "task_id": D})], "tool_use", 4400, 70),
  lead(["bob is writing the README section."], "end_turn", 4500, 15),
  # Wake: bob's result and idle_notification.
  lead(["All three tasks are done. Shutting the team down, one at a time.",
        ("request_shutdown", {"teammate": "bob"})], "tool_use", 4700, 40),
  lead(["Waiting for bob's acknowledgement."], "end_turn", 4800, 10),
  # Wake: bob's shutdown_response.
  lead([("request_shutdown", {"teammate": "alice"})], "tool_use", 4900, 20),
  lead(["Waiting for alice's acknowledgement."], "end_turn", 5000, 10),
  # Wake: alice's shutdown_response.
  lead(["Done: greet.py, test_greet.py and a README section, written by alice (plan approved first) and bob. Both teammates have shut down."], "end_turn", 5200, 40),
]

alice = recorder("alice")
alice_turns = [
  alice(["I'll plan before touching files.",
         ("submit_plan", {"plan": "1. Write greet.py: greet(name) returns 'Hello, {name}!'.\n2. Complete the task."})], "tool_use", 900, 60),
  alice(["Plan submitted; waiting for the Lead's decision."], "end_turn", 1000, 15),
  alice([("write_file", {"path": "greet.py", "content": "def greet(name):\n    return f\"Hello, {name}!\"\n"})], "tool_use", 1200, 50),
  alice([("complete_task", {"task_id": M})], "tool_use", 1300, 20),
  alice(["greet.py is written: greet(name) returns 'Hello, {name}!'."], "end_turn", 1400, 20),
  # After the auto-claim of the test task.
  alice([("write_file", {"path": "test_greet.py", "content": "import unittest\n\nfrom greet import greet\n\n\nclass GreetTest(unittest.TestCase):\n    def test_greets_by_name(self):\n        self.assertEqual(greet(\"team\"), \"Hello, team!\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n"})], "tool_use", 1600, 90),
  alice([("complete_task", {"task_id": T})], "tool_use", 1700, 20),
  alice(["test_greet.py checks greet('team')."], "end_turn", 1800, 15),
]

bob = recorder("bob")
bob_turns = [
  bob([("write_file", {"path": "README.md", "content": "# Greeting\n\n`greet(name)` in greet.py returns `Hello, {name}!`; test_greet.py checks it.\n"})], "tool_use", 900, 50),
  bob([("complete_task", {"task_id": D})], "tool_use", 1000, 20),
  bob(["README.md documents greet()."], "end_turn", 1100, 10),
]

for name, turns in (("turns.jsonl", lead_turns), ("alice.jsonl", alice_turns), ("bob.jsonl", bob_turns)):
    with open(os.path.join(here, name), "w") as f:
        f.write(dump(turns) + "\n")
