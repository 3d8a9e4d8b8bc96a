"""The deploy/ recipes name the right image, user, ports, paths and probes.

Nothing in deploy/ can be built or run on a machine without Docker or a
cluster, so these tests read the files: the Dockerfile's instructions, and
the Kubernetes and Cloud Run YAML through a small parser for the block-style
YAML subset the files use (no PyYAML: the project has no dependencies).  The
parser refuses anything outside that subset rather than misread it.
"""

import glob
import json
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
SERVICE_PORT = 8080
NONROOT_USER = "65532"
DRAIN_SECONDS = 8                 # the service drains for up to 8 s on SIGTERM
DEFAULT_DEADLINE_SECONDS = 120    # kindgi-timeout-ms default
ENTRYPOINT = ["python3", "/app/kindgi_pack_min.pyz", "--index", "/app/index.json"]


def read(name):
    with open(os.path.join(DEPLOY, name), encoding="utf-8") as f:
        return f.read()


# -- a block-style YAML subset ------------------------------------------------

KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_./-]*):(?: +(.*))?$")
INTEGER = re.compile(r"^-?[0-9]+$")


def yaml_lines(text):
    """Return [indent, content] for every line that holds something."""
    lines = []
    for number, raw in enumerate(text.split("\n"), 1):
        if "\t" in raw:
            raise ValueError("line %d: tab characters are not supported" % number)
        content = raw.strip()
        if content and not content.startswith("#"):
            lines.append([len(raw) - len(raw.lstrip(" ")), content])
    return lines


def yaml_scalar(text):
    """Return the value of a one-line scalar, its trailing comment removed."""
    if text.startswith('"'):
        return json.loads(text[:text.rindex('"') + 1])
    if text.startswith("'"):
        return text[1:text.rindex("'")].replace("''", "'")
    text = re.sub(r"\s+#.*$", "", text)
    if text in ("{}", "[]"):
        return {} if text == "{}" else []
    if text[:1] in "{[&*|>!%@`":
        raise ValueError("unsupported YAML value: %r" % text)
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "~"):
        return None
    return int(text) if INTEGER.match(text) else text


def is_item(line):
    return line[1] == "-" or line[1].startswith("- ")


def yaml_node(lines, i, indent):
    """Parse the node whose first line is lines[i]; return (value, next i)."""
    if is_item(lines[i]):
        return yaml_sequence(lines, i, indent)
    if KEY.match(lines[i][1]):
        return yaml_mapping(lines, i, indent)
    return yaml_scalar(lines[i][1]), i + 1


def yaml_child(lines, i, indent):
    """Parse the block under a `key:` or `-` that ended at lines[i - 1]."""
    if i < len(lines) and lines[i][0] > indent:
        return yaml_node(lines, i, lines[i][0])
    if i < len(lines) and lines[i][0] == indent and is_item(lines[i]):
        return yaml_sequence(lines, i, indent)
    return None, i


def yaml_mapping(lines, i, indent):
    mapping = {}
    while i < len(lines) and lines[i][0] == indent and not is_item(lines[i]):
        match = KEY.match(lines[i][1])
        if not match or match.group(1) in mapping:
            raise ValueError("bad or repeated key line: %r" % lines[i][1])
        if match.group(2) is None:
            mapping[match.group(1)], i = yaml_child(lines, i + 1, indent)
        else:
            mapping[match.group(1)], i = yaml_scalar(match.group(2)), i + 1
    return mapping, i


def yaml_sequence(lines, i, indent):
    items = []
    while i < len(lines) and lines[i][0] == indent and is_item(lines[i]):
        rest = lines[i][1][1:].lstrip(" ")
        if not rest:
            value, i = yaml_child(lines, i + 1, indent)
        else:
            # "- key: value" opens a mapping indented at the text after "- ".
            inner = indent + len(lines[i][1]) - len(rest)
            lines[i] = [inner, rest]
            value, i = yaml_node(lines, i, inner)
        items.append(value)
    return items, i


def parse_yaml(text):
    """Return the documents of *text*, a list of parsed values."""
    documents = []
    for part in re.split(r"(?m)^---[ \t]*$", text):
        lines = yaml_lines(part)
        if not lines:
            continue
        value, end = yaml_node(lines, 0, lines[0][0])
        if end != len(lines):
            raise ValueError("unexpected indentation at: %r" % lines[end][1])
        documents.append(value)
    return documents


def test_yaml_subset_parser_reads_nesting_and_refuses_the_unknown():
    text = "a:\n  b: [] # c\n  c:\n    - x: 1\n      y: 'it''s'\n    - \"2\"\nd:\n- true\n"
    assert parse_yaml(text) == [{"a": {"b": [], "c": [{"x": 1, "y": "it's"}, "2"]},
                                 "d": [True]}]
    for bad in ("a: |\n  text\n", "a: [1, 2]\n", "a: 1\n  b: 2\n", "a: 1\na: 2\n"):
        with pytest.raises(ValueError):
            parse_yaml(bad)


# -- shared checks for the two platforms --------------------------------------

def env_of(container):
    """The container's env entries by name."""
    return {entry["name"]: entry for entry in container.get("env", [])}


def resolve_port(container, port):
    """The port number a probe or Service names, by number or port name."""
    if isinstance(port, int):
        return port
    named = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    assert named, "no container port named %r" % port
    return named[0]


def check_probes(container):
    """startup and readiness on /readyz, liveness on /healthz, on the service port."""
    expected = {"startupProbe": "/readyz", "readinessProbe": "/readyz",
                "livenessProbe": "/healthz"}
    for probe, path in expected.items():
        http_get = container[probe]["httpGet"]
        assert http_get["path"] == path, probe
        assert resolve_port(container, http_get["port"]) == SERVICE_PORT, probe


def check_token_from_secret(container):
    token = env_of(container)["KINDGI_PACK_SERVICE_TOKEN"]
    assert "value" not in token, "the token must come from a secret, not the file"
    reference = token["valueFrom"]["secretKeyRef"]
    assert reference["name"] and reference["key"]


def concurrency_cap(container):
    value = env_of(container)["KINDGI_PACK_SERVICE_MAX_CONCURRENCY"]["value"]
    assert isinstance(value, str) and value.isdigit() and int(value) >= 1
    return int(value)


# -- Kubernetes ---------------------------------------------------------------

@pytest.fixture(scope="module")
def kubernetes():
    documents = parse_yaml(read("kubernetes.yaml"))
    return {document["kind"]: document for document in documents}


def pod_spec(deployment):
    return deployment["spec"]["template"]["spec"]


def test_kubernetes_file_holds_a_deployment_and_a_service(kubernetes):
    assert sorted(kubernetes) == ["Deployment", "Service"]
    assert kubernetes["Deployment"]["apiVersion"] == "apps/v1"
    assert kubernetes["Service"]["apiVersion"] == "v1"


def test_kubernetes_container_listens_where_the_probes_look(kubernetes):
    container = pod_spec(kubernetes["Deployment"])["containers"][0]
    assert [p["containerPort"] for p in container["ports"]] == [SERVICE_PORT]
    assert env_of(container)["PORT"]["value"] == str(SERVICE_PORT)
    check_probes(container)


def test_kubernetes_grace_period_outlasts_the_drain(kubernetes):
    assert pod_spec(kubernetes["Deployment"])["terminationGracePeriodSeconds"] > DRAIN_SECONDS


def test_kubernetes_token_and_concurrency_come_from_the_environment(kubernetes):
    container = pod_spec(kubernetes["Deployment"])["containers"][0]
    check_token_from_secret(container)
    concurrency_cap(container)


def test_kubernetes_runs_as_the_image_user(kubernetes):
    security = pod_spec(kubernetes["Deployment"])["securityContext"]
    assert security["runAsNonRoot"] is True
    assert str(security["runAsUser"]) == NONROOT_USER


def test_kubernetes_selectors_reach_the_pods_and_port(kubernetes):
    deployment, service = kubernetes["Deployment"], kubernetes["Service"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for selector in (deployment["spec"]["selector"]["matchLabels"],
                     service["spec"]["selector"]):
        assert selector and all(labels.get(k) == v for k, v in selector.items())
    container = pod_spec(deployment)["containers"][0]
    [port] = service["spec"]["ports"]
    assert resolve_port(container, port["targetPort"]) == SERVICE_PORT


# -- Cloud Run ----------------------------------------------------------------

@pytest.fixture(scope="module")
def cloud_run():
    [document] = parse_yaml(read("cloudrun.yaml"))
    return document


def test_cloud_run_file_is_a_knative_service(cloud_run):
    assert cloud_run["apiVersion"] == "serving.knative.dev/v1"
    assert cloud_run["kind"] == "Service"


def test_cloud_run_container_listens_where_the_probes_look(cloud_run):
    [container] = cloud_run["spec"]["template"]["spec"]["containers"]
    assert [p["containerPort"] for p in container["ports"]] == [SERVICE_PORT]
    assert "PORT" not in env_of(container), "Cloud Run sets PORT itself"
    check_probes(container)
    check_token_from_secret(container)


def test_cloud_run_concurrency_equals_the_service_cap(cloud_run):
    spec = cloud_run["spec"]["template"]["spec"]
    assert spec["containerConcurrency"] == concurrency_cap(spec["containers"][0])
    assert spec["timeoutSeconds"] >= DEFAULT_DEADLINE_SECONDS


# -- Dockerfile ---------------------------------------------------------------

def dockerfile_stages():
    """The Dockerfile's stages, each a list of (INSTRUCTION, arguments)."""
    text = re.sub(r"\\\n", " ", read("Dockerfile"))
    stages = []
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, arguments = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        assert stages, "an instruction before the first FROM: %r" % line
        stages[-1].append((instruction.upper(), arguments.strip()))
    return stages


def arguments_of(stage, instruction):
    return [arguments for name, arguments in stage if name == instruction]


def test_dockerfile_runtime_is_distroless_nonroot_on_port_8080():
    runtime = dockerfile_stages()[-1]
    [base] = arguments_of(runtime, "FROM")
    assert base.startswith("gcr.io/distroless/python3")
    assert arguments_of(runtime, "USER") == [NONROOT_USER]
    assert arguments_of(runtime, "EXPOSE") == [str(SERVICE_PORT)]
    assert "PORT=%d" % SERVICE_PORT in " ".join(arguments_of(runtime, "ENV")).split()


def test_dockerfile_entrypoint_is_exec_form_and_needs_no_shell():
    runtime = dockerfile_stages()[-1]
    [entrypoint] = arguments_of(runtime, "ENTRYPOINT")
    assert json.loads(entrypoint) == ENTRYPOINT
    for instruction in ("RUN", "CMD"):
        for arguments in arguments_of(runtime, instruction):
            assert arguments.startswith("["), "%s in shell form: no shell in distroless" % instruction


def test_dockerfile_puts_the_archive_and_the_index_where_the_entrypoint_looks():
    runtime = dockerfile_stages()[-1]
    targets = [arguments.split()[-1] for arguments in arguments_of(runtime, "COPY")]
    assert "/app/kindgi_pack_min.pyz" in targets
    assert "/app/" in targets, "the pack folder (index.json and modules) goes to /app/"


def test_dockerfile_build_stage_copies_files_that_exist():
    build = dockerfile_stages()[0]
    [pack_arg] = [a for a in arguments_of(build, "ARG") if a.startswith("PACK=")]
    pack = pack_arg.split("=", 1)[1]
    assert os.path.isfile(os.path.join(ROOT, pack, "index.json"))
    copied = []
    for arguments in arguments_of(build, "COPY"):
        for source in arguments.split()[:-1]:
            path = source.replace("${PACK}", pack)
            found = glob.glob(os.path.join(ROOT, path))
            assert found, path
            copied += [os.path.relpath(p, ROOT) for p in found]
    assert {"kindgi_pack_min.py", "schema_lite.py", "tools/build.py"} <= set(copied), \
        "the build stage needs the service's modules and tools/build.py"
    assert any("--check" in a for a in arguments_of(build, "RUN")), \
        "the image build should boot the pack once with --check"


def test_dockerfile_checks_the_pack_as_the_runtime_user():
    """The image build's --check reads the pack as the service will: a module only root can read
    passed the check as root and failed the boot."""
    build = dockerfile_stages()[0]
    check = [i for i, (name, arguments) in enumerate(build) if name == "RUN" and "--check" in arguments][-1]
    users = [arguments for name, arguments in build[:check] if name == "USER"]
    assert users and users[-1] == NONROOT_USER


# -- the example pack the image ships by default ------------------------------

def test_example_pack_index_names_modules_that_exist():
    folder = os.path.join(ROOT, "examples", "hello-pack")
    with open(os.path.join(folder, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    assert index["v"] == 1 and index["packId"] == "hello-pack"
    paths = [t["modulePath"] for t in index["tools"]]
    paths += [g["checkModulePath"] for g in index["guardrails"]]
    for path in paths:
        assert os.path.isfile(os.path.join(folder, path)), path
