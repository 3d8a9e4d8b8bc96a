"""End-to-end: tasks that async pack code starts and leaves running (README: Protocol coverage).

A handler may start a task and return without awaiting it: a write it does
not wait for, a metric flushed later.  As in the official service, whose one
event loop runs it on, the task finishes after the call has been answered,
even when the caller's connection is gone.  What asyncio reports about such a
task (an exception nobody retrieved) is a ``pack-task-error`` record, and
stderr stays JSON lines.  No more event loops finish tasks at once than calls
may run at once; past that, a record says so once and the tasks of the other
loops run only while their connection's next calls do.
"""

import json
import signal
import time

from conftest import PackWriter

TASKS = '''
import asyncio, os
from kindgi import tool


async def write_later(path, seconds):
    await asyncio.sleep(seconds)
    await asyncio.sleep(0)          # and once more: a task that awaits twice still ends
    open(path, "w").close()


async def fail():
    raise ValueError("lost in the background")


async def forever():
    while True:
        await asyncio.sleep(1)


@tool(description="A test tool.", input={"type": "object"}, output={}, id="later", version="1.0.0")
async def later(input, ctx):
    asyncio.ensure_future(write_later(input["path"], input.get("seconds", 0.2)))
    return {"started": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="fails", version="1.0.0")
async def fails(input, ctx):
    asyncio.ensure_future(fail())
    await asyncio.sleep(0)
    return {"started": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="forever", version="1.0.0")
async def start_forever(input, ctx):
    asyncio.ensure_future(forever())
    return {"started": True}
'''


def start(launcher, tmp_path, env=None):
    pack = PackWriter(tmp_path)
    pack.module("tools/tasks.py", TASKS)
    for tool_id in ("later", "fails", "forever"):
        pack.tool(tool_id, "tools/tasks.py", version="1.0.0")
    return launcher.start(pack.write(), env=env)


def wait_file(path, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def test_a_task_left_running_finishes_after_the_answer_and_the_connection(launcher, tmp_path):
    service = start(launcher, tmp_path)
    conn = service.connection()
    answer = service.call_tool("later", {"path": str(tmp_path / "written")}, conn=conn)
    assert answer.json["output"] == {"started": True}
    conn.close()                                # no later call on this connection to carry the task
    assert wait_file(tmp_path / "written"), "the task the handler left running never finished"
    again = service.call_tool("later", {"path": str(tmp_path / "again"), "seconds": 0})
    assert again.json["output"] == {"started": True} and wait_file(tmp_path / "again")


def test_a_failing_task_is_a_record_and_stderr_stays_json(launcher, tmp_path):
    service = start(launcher, tmp_path)
    for _ in range(3):
        assert service.call_tool("fails", {}).json["output"] == {"started": True}
    record = service.wait_record("pack-task-error")
    assert record["level"] == "warn"
    assert "ValueError: lost in the background" in record["message"]
    assert "lost in the background" in record["stack"]
    service.signal(signal.SIGTERM)
    assert service.wait_exit() == 0
    for line in service.raw_stderr:
        assert isinstance(json.loads(line), dict), line


def test_event_loops_finishing_tasks_are_capped(launcher, tmp_path):
    service = start(launcher, tmp_path, env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "2"})
    connections = [service.connection() for _ in range(3)]
    for conn in connections:                    # each connection's loop is left a task that never ends
        assert service.call_tool("forever", {}, conn=conn).json["output"] == {"started": True}
    assert service.wait_record("pack-tasks-waiting")["message"].startswith(
        "Async handlers leave tasks running on 2 event loops already")
    answer = service.call_tool("later", {"path": str(tmp_path / "written"), "seconds": 0}, conn=connections[2])
    assert answer.json["output"] == {"started": True}, "the connection whose loop stayed can't call again"
    for conn in connections:
        conn.close()
    service.signal(signal.SIGTERM)
    assert service.wait_exit() == 0
    assert len(service.records_of("pack-tasks-waiting")) == 1
