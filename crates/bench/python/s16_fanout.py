"""The course's side of the bench's `workflow` figure: the course's s16 (`code.py`, loaded as a
module, unchanged) with its `AnthropicAgentRunner` on the `anthropic` SDK, running a workflow of
N agent() calls in one `parallel` against ANTHROPIC_BASE_URL, run files in `.runtime/` of the
current folder. The same workflow as `crates/workflow/examples/fanout.rs`.

python s16_fanout.py PATH/TO/s16_workflow_runtime/code.py [N]
"""
import asyncio
import importlib.util
import os
import sys
from pathlib import Path

import anthropic

code, calls = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000
spec = importlib.util.spec_from_file_location("s16_course", code)
course = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course)
course.STORE = Path.cwd() / ".runtime"
client = anthropic.Anthropic(base_url=os.environ["ANTHROPIC_BASE_URL"], api_key="bench", max_retries=0)
course.RUNNER_FACTORY = lambda: course.AnthropicAgentRunner(client, os.environ.get("MODEL_ID", "x"))


async def fanout(ctx, _args):
    return await ctx.parallel([
        (lambda i=i: ctx.agent(f"Step {i}: answer briefly.", label=f"step-{i}")) for i in range(calls)
    ])


course.WORKFLOWS["fanout"] = ({"name": "fanout", "description": "N agent() calls at once"}, fanout)
out = asyncio.run(course.run_workflow("fanout", {}))
sys.exit(0 if out["task"]["status"] == "completed" else 1)
