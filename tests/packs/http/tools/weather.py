from kindgi import http_tool

CITY = {"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
        "required": ["city"]}

weather = http_tool(
    id="acme.http.weather", description="Today's weather in a city.", version="1.1.0",
    input=CITY, output={"type": "object"}, method="GET",
    url_template="https://weather.example.test/v1/{city}?units={units}",
    headers={"accept": "application/json", "x-client": "kindgi"},
    authorization={"kind": "bearer", "secretRef": {"envName": "local", "name": "WEATHER_TOKEN"}},
    timeout_ms=5000, parse_json=True, success_status=(200, 299), mutating=False,
    effects=[{"kind": "reads", "resource": "net:weather"}])

post = http_tool(
    id="acme.http.post", description="Post a note.", input={"type": "object", "properties": {
        "note": {"type": "string"}, "board": {"type": "string"}}},
    output={}, method="POST", url_template="https://notes.example.test/boards/{board}",
    request_body={"kind": "text", "template": "Note: {note}"},
    authorization={"kind": "header", "headerName": "x-api-key",
                   "secretRef": {"envName": "local", "name": "NOTES_KEY"}},
    needs_approval_when_unattended=True)

ping = http_tool(id="acme.http.ping", description="Ping.", input={"type": "object"}, output={},
                 method="HEAD" if False else "GET", url_template="https://ping.example.test/",
                 request_body={"kind": "json-input"})
