#!/usr/bin/env python3
"""Writes demo/turns.jsonl, the recorded model turns of `s14 --demo`:
python3 demo/gen_turns.py > demo/turns.jsonl
"""
import json
n = [0]
def msg(content, stop, inp, out):
    n[0] += 1
    blocks = []
    for b in content:
        if isinstance(b, str):
            blocks.append({"type": "text", "text": b})
        else:
            name, inp_ = b
            blocks.append({"type": "tool_use", "id": "toolu_01S14Demo%02d%s" % (n[0], "x" * 6 + str(len(blocks))), "name": name, "input": inp_})
    return {"id": "msg_demo_s14_%02d" % n[0], "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": inp, "output_tokens": out}}
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
print("\n".join(json.dumps(t, ensure_ascii=False) for t in turns))
