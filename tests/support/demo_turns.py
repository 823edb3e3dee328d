"""Recorded model turns for a chapter's `--demo`, written by hand: each chapter's `demo/gen_turns.py`
lists its turns with `msg` and prints them as `demo/turns.jsonl` (one Messages API response a line)."""
import json


def recorder(chapter):
    """A `msg(content, stop_reason, input_tokens, output_tokens)` for `chapter` (`s10`): `content` holds
    strings (text blocks) and `(name, input)` pairs (tool_use blocks); ids are numbered per response."""
    n = [0]

    def msg(content, stop, inp, out):
        n[0] += 1
        blocks = []
        for b in content:
            if isinstance(b, str):
                blocks.append({"type": "text", "text": b})
            else:
                name, inp_ = b
                tag = chapter.upper()
                blocks.append({"type": "tool_use", "id": "toolu_01%sDemo%02d%s" % (tag, n[0], "x" * 6 + str(len(blocks))),
                               "name": name, "input": inp_})
        return {"id": "msg_demo_%s_%02d" % (chapter, n[0]), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": inp, "output_tokens": out}}

    return msg


def dump(turns):
    """The turns as `turns.jsonl` prints them."""
    return "\n".join(json.dumps(t, ensure_ascii=False) for t in turns)
