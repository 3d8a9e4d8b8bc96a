from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

http = http_tool(id="acme.errors.http-method", description="x", input={"type": "object"}, output={},
                 method="FETCH", url_template="", timeout_ms=0, success_status=(99, 700))
