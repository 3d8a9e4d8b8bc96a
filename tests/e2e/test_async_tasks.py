"""End-to-end: async pack code runs on one event loop (README: Protocol coverage).

As on the official service: a lock, a queue or a client connection that a
module keeps works from every call, whichever connection it comes on; a task
a handler starts and leaves running finishes after the answer, even when the
caller's connection is gone; what asyncio reports about such a task (an
exception nobody retrieved) is a ``pack-task-error`` record, and stderr stays
JSON lines.  asyncio's child processes work, also on Python 3.6 and 3.7.
Pack code that stops the loop, or a task that raises SystemExit, doesn't end
it.  When a module set up an event loop on the main thread at
import (a pool opened with ``run_until_complete``; before Python 3.10, any
``asyncio.Lock()`` made at import takes that loop), that loop is the one; in
a pack with no async code it is left alone, for sync handlers to run.
"""

import json
import signal
import socket
import threading
import time

import pytest

from conftest import PackWriter

TASKS = '''
import asyncio, gc, os, sys, weakref
from kindgi import tool

LOCK = asyncio.Lock()
KEPT = {}
OUTPUTS = []


class Output(dict):
    """A dict that can be watched with a weak reference."""


async def write_later(path, seconds):
    await asyncio.sleep(seconds)
    await asyncio.sleep(0)
    open(path, "w").close()


async def fail():
    raise ValueError("lost in the background, with Bearer abc.def")


async def exit_quietly():
    raise SystemExit(3)


@tool(description="A test tool.", input={"type": "object"}, output={}, id="later", version="1.0.0")
async def later(input, ctx):
    asyncio.ensure_future(write_later(input["path"], input.get("seconds", 0.2)))
    return {"started": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="fails", version="1.0.0")
async def fails(input, ctx):
    asyncio.ensure_future(fail())
    await asyncio.sleep(0)
    return {"started": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="stops", version="1.0.0")
async def stops(input, ctx):
    asyncio.get_event_loop().stop()
    asyncio.ensure_future(exit_quietly())
    return {"stopped": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="reports", version="1.0.0")
async def reports(input, ctx):
    """Pack code reporting to asyncio itself, with a message that is not text."""
    asyncio.get_event_loop().call_exception_handler({"message": 5})
    return {"reported": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="locked", version="1.0.0")
async def locked(input, ctx):
    async with LOCK:
        await asyncio.sleep(0.2)
    return {"locked": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="child", version="1.0.0")
async def child(input, ctx):
    """A child process, as asyncio runs them: one that answers, one that is killed."""
    said = await asyncio.create_subprocess_exec(sys.executable, "-c", "print('from the child')",
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await said.communicate()
    sleeper = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(30)")
    sleeper.kill()
    return {"said": out.decode().strip(), "code": said.returncode, "killed": await sleeper.wait()}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="watched", version="1.0.0")
async def watched(input, ctx):
    gc.disable()   # for good: only the last reference going may free the output, not the collector
    output = Output(text="x" * input.get("size", 10))
    OUTPUTS.append(weakref.ref(output))
    if input.get("then") == "raise":
        raise ValueError("with the output in this frame")
    if input.get("then") == "wait":
        await asyncio.sleep(5)   # cancelled at the call's deadline, the output in this frame
    return output


@tool(description="A test tool.", input={"type": "object"}, output={}, id="freed", version="1.0.0")
def freed(input, ctx):
    return {"alive": [ref() is not None for ref in OUTPUTS]}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="client", version="1.0.0")
async def client(input, ctx):
    """A connection the module keeps, as a pack keeps an HTTP client or a database pool."""
    if "conn" not in KEPT:
        KEPT["conn"] = await asyncio.open_connection("127.0.0.1", input["port"])
    reader, writer = KEPT["conn"]
    writer.write(input["say"].encode() + b"\\n")
    await writer.drain()
    return {"heard": (await reader.readline()).decode().strip()}
'''

SET_UP_AT_IMPORT = '''
import asyncio, socket
from kindgi import tool

# A pool opened at import on a loop of the module's own: its streams belong to that loop.
LOOP = asyncio.new_event_loop()
asyncio.set_event_loop(LOOP)
OURS, THEIRS = socket.socketpair()
READER, WRITER = LOOP.run_until_complete(asyncio.open_connection(sock=OURS))


@tool(description="A test tool.", input={"type": "object"}, output={}, id="pooled", version="1.0.0")
async def pooled(input, ctx):
    THEIRS.sendall(input["say"].encode() + b"\\n")
    return {"heard": (await READER.readline()).decode().strip(),
            "same loop": asyncio.get_event_loop() is LOOP}
'''

SYNC_WRAPPER = '''
import asyncio, sys
from kindgi import tool

# A sync wrapper around async code: the module's own loop, run by each call.
LOOP = asyncio.new_event_loop()
asyncio.set_event_loop(LOOP)
OPENED = LOOP.run_until_complete(asyncio.sleep(0, "at import"))


async def child():
    said = await asyncio.create_subprocess_exec(sys.executable, "-c", "print('from the child')",
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await said.communicate()
    return out.decode().strip()


@tool(description="A test tool.", input={"type": "object"}, output={}, id="wrapped", version="1.0.0")
def wrapped(input, ctx):
    return {"opened": OPENED, "said": LOOP.run_until_complete(child())}
'''

CLOSED_AT_EXIT = '''
import asyncio, atexit, os
from kindgi import tool

LOOP = asyncio.new_event_loop()
asyncio.set_event_loop(LOOP)


async def close():
    await asyncio.sleep(0)
    open(os.path.join(os.path.dirname(__file__), "closed"), "w").close()


@atexit.register
def close_the_client():
    """As a module closes a client it opened on its loop: the loop runs once more, at the exit."""
    LOOP.run_until_complete(close())


@tool(description="A test tool.", input={"type": "object"}, output={}, id="pinged", version="1.0.0")
async def pinged(input, ctx):
    return {"same loop": asyncio.get_event_loop() is LOOP}
'''


@pytest.fixture
def service(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/tasks.py", TASKS)
    for tool_id in ("later", "fails", "stops", "reports", "locked", "client", "child", "watched", "freed"):
        pack.tool(tool_id, "tools/tasks.py", version="1.0.0")
    return launcher.start(pack.write())


def wait_file(path, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def on_connections(service, tool_id, inputs):
    """Call ``tool_id`` once per input, each on a connection of its own, all at once; the outputs."""
    outputs = [None] * len(inputs)

    def call(i):
        conn = service.connection()
        try:
            outputs[i] = service.call_tool(tool_id, inputs[i], conn=conn, timeout=10).json.get("output")
        finally:
            conn.close()
    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    return outputs


def echo_server():
    """A line echo server on loopback, for the kept client; its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve():
        conn, _ = server.accept()
        with conn, conn.makefile("rwb") as lines:
            for line in lines:
                lines.write(line)
                lines.flush()
    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def test_a_lock_a_module_keeps_works_from_every_connection(service):
    assert on_connections(service, "locked", [{}] * 3) == [{"locked": True}] * 3


def test_a_client_a_module_keeps_works_from_every_connection(service):
    port = echo_server()
    said = [{"port": port, "say": "call-%d" % i} for i in range(3)]
    for i in range(3):   # one after another, each from a connection of its own
        assert on_connections(service, "client", [said[i]]) == [{"heard": "call-%d" % i}]


def test_child_processes_run_from_async_handlers(service):
    """On Python 3.6 and 3.7 asyncio's own child watcher needs a loop on the main thread."""
    answer = service.call_tool("child", {}, timeout=20)
    assert answer.json.get("output") == {"said": "from the child", "code": 0, "killed": -9}, answer.json


def test_an_async_handlers_output_is_not_kept_once_answered(service):
    """What an async handler returned, or held when it raised or was cancelled, is freed once its
    call is over, with the garbage collector off: nothing keeps it (a task keeping its result,
    a traceback keeping its frames) in a cycle with the call."""
    for size in (10, 1000000):
        assert len(service.call_tool("watched", {"size": size}).json["output"]["text"]) == size
    assert service.call_tool("watched", {"then": "raise"}).json["code"] == "handler-throw"
    assert service.call_tool("watched", {"then": "wait"}, headers={"kindgi-timeout-ms": "200"},
                             timeout=10).json["code"] == "deadline-exceeded"
    end = time.monotonic() + 5
    alive = None
    while alive != [False] * 4 and time.monotonic() < end:   # a call's thread ends just after its answer
        alive = service.call_tool("freed", {}).json["output"]["alive"]
        time.sleep(0.05)
    assert alive == [False] * 4, "still alive: %s (returned, returned, raised, cancelled)" % alive


def test_a_task_left_running_finishes_after_the_answer_and_the_connection(service, tmp_path):
    conn = service.connection()
    answer = service.call_tool("later", {"path": str(tmp_path / "written")}, conn=conn)
    assert answer.json["output"] == {"started": True}
    conn.close()                                # the task must not need this connection
    assert wait_file(tmp_path / "written"), "the task the handler left running never finished"


def test_a_failing_task_is_a_record_and_stderr_stays_json(service):
    for _ in range(3):
        assert service.call_tool("fails", {}).json["output"] == {"started": True}
    record = service.wait_record("pack-task-error")
    assert record["level"] == "warn"
    assert "ValueError: lost in the background, with Bearer [redacted]" in record["message"]
    assert "lost in the background" in record["stack"] and "abc.def" not in record["stack"]   # masked as pack records are
    service.signal(signal.SIGTERM)
    assert service.wait_exit() == 0
    for line in service.raw_stderr:
        assert isinstance(json.loads(line), dict), line


def test_a_report_whose_message_is_not_text_is_a_record(service):
    assert service.call_tool("reports", {}).json["output"] == {"reported": True}
    assert service.wait_record("pack-task-error")["message"] == "Async pack code: 5"
    service.signal(signal.SIGTERM)
    assert service.wait_exit() == 0
    for line in service.raw_stderr:
        assert isinstance(json.loads(line), dict), line


def test_pack_code_that_stops_the_loop_does_not_end_it(service, tmp_path):
    assert service.call_tool("stops", {}).json["output"] == {"stopped": True}
    record = service.wait_record("pack-task-error", where=lambda r: "SystemExit" in r["message"])
    assert record["message"].startswith("Async pack code: a task stopped the event loop")
    answer = service.call_tool("later", {"path": str(tmp_path / "after"), "seconds": 0})
    assert answer.json["output"] == {"started": True} and wait_file(tmp_path / "after")


def test_an_event_loop_pack_code_set_up_at_import_runs_its_async_code(launcher, tmp_path):
    """What a module opened at import on its main-thread loop (a pool, streams) works in calls."""
    pack = PackWriter(tmp_path)
    pack.module("tools/pooled.py", SET_UP_AT_IMPORT)
    pack.tool("pooled", "tools/pooled.py", version="1.0.0")
    service = launcher.start(pack.write())
    for i in range(2):
        answer = service.call_tool("pooled", {"say": "call-%d" % i})
        assert answer.json.get("output") == {"heard": "call-%d" % i, "same loop": True}, answer.json


def test_a_sync_handler_runs_the_loop_its_module_set_up_at_import(launcher, tmp_path):
    """A pack with no async code leaves that loop alone, as the official service does: a sync
    handler may run it (``LOOP.run_until_complete``), its child processes too on 3.6 and 3.7."""
    pack = PackWriter(tmp_path)
    pack.module("tools/wrapped.py", SYNC_WRAPPER)
    pack.tool("wrapped", "tools/wrapped.py", version="1.0.0")
    service = launcher.start(pack.write())
    for _ in range(2):
        answer = service.call_tool("wrapped", {}, timeout=20)
        assert answer.json.get("output") == {"opened": "at import", "said": "from the child"}, answer.json


def test_an_exit_handler_runs_the_loop_its_module_set_up_at_import(launcher, tmp_path):
    """After the drain the loop is stopped before the exit handlers run, as at the official
    service's exit: one that runs it (``LOOP.run_until_complete(client.close())``) works."""
    pack = PackWriter(tmp_path)
    pack.module("tools/closing.py", CLOSED_AT_EXIT)
    pack.tool("pinged", "tools/closing.py", version="1.0.0")
    service = launcher.start(pack.write())
    assert service.call_tool("pinged", {}).json.get("output") == {"same loop": True}
    service.signal(signal.SIGTERM)
    assert service.wait_exit() == 0
    assert (tmp_path / "tools" / "closed").exists(), "the exit handler could not run the loop"
    for line in service.raw_stderr:
        assert isinstance(json.loads(line), dict), line


OWN_POLICY = '''
import asyncio
from kindgi import tool


class Policy(asyncio.events.BaseDefaultEventLoopPolicy):
    """Shaped as uvloop's: its loops wait for their children themselves, it has no child watcher."""
    _loop_factory = asyncio.SelectorEventLoop


asyncio.set_event_loop_policy(Policy())


@tool(description="A test tool.", input={"type": "object"}, output={}, id="plain", version="1.0.0")
def plain(input, ctx):
    return {"said": "plain"}


async def said(input, ctx):
    await asyncio.sleep(0)
    return {"said": "async"}
'''


@pytest.mark.parametrize("kinds", [("plain",), ("plain", "async")])
def test_a_pack_with_an_event_loop_policy_that_has_no_child_watcher_boots(launcher, tmp_path, kinds):
    """Python 3.6 and 3.7: the service gives asyncio a child watcher of its own; a policy with no
    child watchers (uvloop's) refused it, and the boot ended in a traceback."""
    source = OWN_POLICY
    if "async" in kinds:
        source += '\nsaid = tool(description="A test tool.", input={"type": "object"}, output={}, ' \
                  'id="said", version="1.0.0")(said)\n'
    pack = PackWriter(tmp_path)
    pack.module("tools/policy.py", source)
    pack.tool("plain", "tools/policy.py", version="1.0.0")
    if "async" in kinds:
        pack.tool("said", "tools/policy.py", version="1.0.0")
    service = launcher.start(pack.write())
    for kind in kinds:
        answer = service.call_tool("said" if kind == "async" else kind, {})
        assert answer.json.get("output") == {"said": kind}, answer.json
