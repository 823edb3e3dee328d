#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s14 --demo`:
python3 demo/gen_turns.py > demo/turns.jsonl
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tests/support"))
from demo_turns import dump, recorder

msg = recorder("s14")
turns = [
  msg(["The docs tools are not in my tool list yet: I'll connect the server first.",
       ("connect_mcp", {"name": "docs"})], "tool_use", 1420, 60),
  msg(["Connected. Its tools are mine from this request on.",
       ("mcp__docs__search", {"query": "agent hooks"})], "tool_use", 1610, 50),
  msg([("mcp__docs__get_version", {})], "tool_use", 1700, 30),
  msg(["Now the deploy server, for the web service.",
       ("connect_mcp", {"name": "deploy"})], "tool_use", 1790, 40),
  msg([("mcp__deploy__trigger", {"service": "web"})], "tool_use", 1900, 40),
  msg(["Done:\n\n- the docs search for agent hooks found 3 results;\n- the documentation API is v2.1.0;\n- the web deployment was triggered, after you allowed it: deploy's trigger is an external tool the host confirms, whatever the server says about it."],
      "end_turn", 2010, 90),
]
print(dump(turns))
