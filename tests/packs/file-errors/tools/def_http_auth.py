from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

http = http_tool(id="acme.errors.http-auth", description="x", input={"type": "object"}, output={},
                 method="GET", url_template="https://x.test/", authorization={"kind": "basic"},
                 headers={"": "empty name"})
