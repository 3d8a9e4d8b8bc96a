"""When the real ``kindgi`` SDK is importable, the service uses its objects.

The SDK (kindgi 0.1.10, Python 3.11+, with pydantic) goes into .venv-sdk/ at
the repository root (ignored by git), made once and reused (tests/e2e/indexing.py).
Without a registry to install from, the test skips and says why.  Runs only on
the main interpreter (the SDK needs 3.11+).
"""

from __future__ import annotations

import os
import sys

import pytest

from indexing import require_sdk as sdk_python

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KINDGI_TEST_PYTHON")) or sys.version_info < (3, 11),
    reason="the real SDK needs Python 3.11+; proved once, on the main interpreter")


SDK_PACK = '''
from pydantic import BaseModel, Field

import kindgi
from kindgi import CheckResult, RunTrace, ToolContext, guardrail, tool


class Order(BaseModel):
    item: str = Field(min_length=1)
    quantity: int = 1


@tool(id="which-sdk", version="1.0.0", description="Says which kindgi it runs on.")
def which_sdk(input: Order, ctx: ToolContext) -> dict:
    return {"standin": "pack-min" in kindgi.__version__, "module": type(ctx).__module__,
            "item": input.item, "quantity": input.quantity, "tenant": ctx.tenant_id}


async def later():
    return {"never": "awaited"}


@tool(id="forgot-await", version="1.0.0", description="Returns a coroutine, as a sync wrapper of an async def does.")
def forgot_await(input: dict) -> dict:
    return later()


class Opaque:
    pass


@guardrail(id="opaque-attributes", on_violation="block")
def opaque_attributes(config: dict, trace: RunTrace) -> CheckResult:
    return CheckResult(passed=True, attributes={"held": Opaque()})


@guardrail(id="short", on_violation="block")
def short(config: dict, trace: RunTrace) -> CheckResult:
    return CheckResult(passed=len(trace.output or "") <= config["max"], judge_response="len")
'''


@pytest.fixture(scope="module")
def sdk_service(module_launcher, tmp_path_factory):
    from conftest import PackWriter
    pack = PackWriter(tmp_path_factory.mktemp("sdk") / "pack")
    pack.module("tools/sdk_pack.py", SDK_PACK)
    pack.tool("which-sdk", "tools/sdk_pack.py", version="1.0.0",
              input={"type": "object", "properties": {"item": {"type": "string"},
                                                      "quantity": {"type": "integer", "default": 2}}})
    pack.tool("forgot-await", "tools/sdk_pack.py", version="1.0.0")
    pack.guardrail("short", "tools/sdk_pack.py", config_schema={"type": "object", "required": ["max"]})
    pack.guardrail("opaque-attributes", "tools/sdk_pack.py")
    return module_launcher.start(pack.write(), python=str(sdk_python()))


def test_the_real_sdk_objects_are_used(sdk_service):
    response = sdk_service.call_tool("which-sdk", {"item": "tea"})
    assert response.status == 200, response
    assert response.json == {"v": 2, "kind": "result", "output": {
        "standin": False, "module": "kindgi.pack.context", "item": "tea", "quantity": 2,
        "tenant": "tenant-1"}}


def test_a_pydantic_failure_under_the_real_sdk_is_input_validation_failed(sdk_service):
    response = sdk_service.call_tool("which-sdk", {"item": ""})
    body = response.json
    assert body["code"] == "input-validation-failed", body
    assert body["issues"][0]["instancePath"] == "/item"
    assert body["issues"][0]["keyword"] == "string_too_short"


def test_output_the_real_sdk_cannot_dump_is_not_json_not_a_throw(sdk_service):
    """pydantic refuses the coroutine as the SDK dumps it: output that is not JSON, as on the
    official service (the handler returned), and the coroutine is closed, without a warning."""
    message = sdk_service.call_tool("forgot-await", {}).json
    assert message["code"] == "output-validation-failed", message
    assert message["message"].startswith('Tool "forgot-await" handler produced output that is not JSON'), message
    assert "Unable to serialize unknown type" in message["message"], message


def test_a_check_under_the_real_sdk(sdk_service):
    response = sdk_service.call_check("short", config={"max": 3},
                                      trace={"runId": "r", "tenantId": "t", "output": "too long"})
    assert response.json == {"v": 2, "kind": "check-result",
                             "result": {"passed": False, "judgeResponse": "len"}}


LOGGING_PACK = '''
from kindgi import tool
from kindgi.log import get_logger

log = get_logger("billing", region="eu")
log.info("loaded")


@tool(id="logs", version="1.0.0", description="Logs with the SDK's get_logger.")
def logs(input: dict) -> dict:
    log.info("charged quietly")
    log.warn("charged loudly", amount=5, password="hunter2")
    get_logger().error("from the root logger")
    return {}
'''


def test_the_real_sdk_get_logger_records_follow_the_service_settings(launcher, tmp_path):
    """The SDK's own get_logger wrote JSON at info on stderr whatever KINDGI_LOG_* said, without
    the pack's id: its records are the service's, as ctx.log's are, level and format included."""
    from conftest import PackWriter
    pack = PackWriter(tmp_path / "pack")
    pack.module("tools/logging_pack.py", LOGGING_PACK)
    pack.tool("logs", "tools/logging_pack.py", version="1.0.0")
    service = launcher.start(pack.write(), python=str(sdk_python()), env={"KINDGI_LOG_LEVEL": "warn"})
    assert service.call_tool("logs", {}).status == 200
    service.signal()
    assert service.wait_exit() == 0
    mine = [r for r in service.records if r["subsystem"] in ("billing", "root")]
    assert [r["message"] for r in mine] == ["charged loudly", "from the root logger"], service.raw_stderr
    loud = mine[0]
    assert loud["level"] == "warn" and loud["region"] == "eu" and loud["amount"] == 5, loud
    assert loud["password"] == "[redacted]" and loud["packId"] == "test-pack", loud


def test_a_check_result_the_real_sdk_cannot_dump_is_not_json_not_a_throw(sdk_service):
    """The check returned; pydantic refuses its result as the SDK writes it: a result that is not
    JSON, as with the stand-in (and as a tool's output is), not the check throwing."""
    message = sdk_service.call_check("opaque-attributes").json
    assert message["code"] == "output-validation-failed", message
    assert message["message"].startswith('Check "opaque-attributes" returned a result that is not JSON: '
                                         '(root) could not be written as JSON: PydanticSerializationError: '), message
    assert "Opaque" in message["message"], message
