"""A schema-driven fuzz run (schemathesis) of docs/openapi.yaml against the live daemon: no 5xx, no
response that violates the schema. The number of generated cases is printed for the record."""
import os
import pathlib
import re
import subprocess
import sys

import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent


def test_openapi_document_is_served(daemon):
    served = requests.get(daemon.base_url + "/openapi.yaml")
    assert served.status_code == 200
    assert served.content == (ROOT / "docs" / "openapi.yaml").read_bytes()


def test_schemathesis_finds_no_server_errors_or_schema_violations(daemon):
    token = requests.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key)).json()
    examples = os.environ.get("CARDVAULT_FUZZ_EXAMPLES", "30")
    env = dict(os.environ, CARDVAULT_CLIENT_ID=daemon.client_id)
    command = [
        str(pathlib.Path(sys.executable).parent / "schemathesis"), "--config-file", str(HERE / "schemathesis.toml"),
        "run", str(ROOT / "docs" / "openapi.yaml"), "--url", daemon.base_url,
        "-H", "Authorization: Bearer " + token["access_token"],
        "--checks", "not_a_server_error,response_schema_conformance,status_code_conformance,"
                    "content_type_conformance,response_headers_conformance",
        "--max-examples", examples, "--workers", "1", "--seed", "1",
        "--report", "junit", "--report-dir", str(daemon.workdir / "schemathesis"),
    ]
    run = subprocess.run(command, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=1200)
    output = run.stdout + run.stderr
    cases = re.findall(r"(\d+) generated", output)
    print("\nschemathesis cases:", cases[-1] if cases else "?")
    print(output[-3000:])
    assert run.returncode == 0, output[-6000:]
