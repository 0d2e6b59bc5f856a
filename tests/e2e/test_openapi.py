"""Schemathesis (property-based tests generated from the OpenAPI document) against the phone service as
`signalyard up` runs it: every check of every phase passes.

pytest starts `signalyard up` (test_up's `Up`) and runs `st run` against `/docs/openapi.json` with the sandbox key.
This module is also the hooks file of that run (`SCHEMATHESIS_HOOKS`): it tells Schemathesis how to make what the
document can describe but not generate, a valid US number (`format: phone-number`), and the one cross-parameter rule
of `GET /usage` (`from` not after `to`), so that a schema-valid request means a request the contract accepts.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import hypothesis
import phonenumbers
import pytest
import schemathesis
from hypothesis import strategies as st

from signalyard.embedded_broker import free_port
from tests.conftest import DATABASES, PG_URL, fresh_postgres_database
from tests.e2e.test_up import Up

ROOT = Path(__file__).resolve().parents[2]
MAX_EXAMPLES = 150
"""Test cases per operation in each generating phase: about 600 requests."""
PHOTO_MAX_EXAMPLES = 40
"""Fewer per operation than phone: the photo API has more operations, and a judged image costs ~10 ms of CPU."""
HELPDESK_MAX_EXAMPLES = 25
"""Per operation, fewer than photo: the helpdesk API has forty-odd operations (some 1,000 cases in each generating
phase, and its stateful phase's chains on top: most of its run, whatever this count)."""
ON_POSTGRESQL = 4
"""On PostgreSQL, a quarter as many generated cases per operation: the run there is for what the databases take
differently (text with NUL bytes, integers past 64 bits, time zones), which the coverage phase's boundary values
reach whatever the count; the many generated cases run on SQLite, the database `signalyard up` serves by default."""
SEED = 20261015
"""A fixed seed: every run sends the same requests."""
RUN_TIMEOUT_S = 900
"""A guard against a hung run, not a speed requirement: a phone run took 80-90 s in a serial run of the suite, and
over 210 s beside the other xdist workers on a loaded machine; on a machine half as fast, the helpdesk's run took
over 450 s (the former guard) in the whole suite."""


# Hooks of the Schemathesis run (imported by `st`, not used by pytest).

if os.environ.get("SCHEMATHESIS_HOOKS") == __name__:  # in the `st` process alone
    # No steering of the fuzzing phase towards accepted requests: Schemathesis reports each answer's success to
    # Hypothesis as a target (`hypothesis.target`), whose hill climbing then spent two thirds of the helpdesk run's CPU
    # (fuzzing: 160 s against 60 s without it, on the same seed, more cases generated and the same checks on each) on
    # operations whose ids no generator can guess. The examples, coverage and stateful phases reach the accepted paths.
    hypothesis.target = lambda observation, *, label="": observation


def _us_area_codes() -> list[int]:
    """Area codes phonenumbers takes for valid numbers of the US region (not Canada, the Caribbean, PR, GU...)."""
    codes = []
    for area_code in range(200, 1000):
        number = phonenumbers.parse(f"+1{area_code}2345678")
        if phonenumbers.is_valid_number(number) and phonenumbers.region_code_for_number(number) == "US":
            codes.append(area_code)
    return codes


SANDBOX_NUMBERS = [f"+1415555{line:04d}" for line in (*range(100, 113), 190, 191)]
"""The sandbox's magic numbers that answer at once (docs/phone.md): every line type, caller-ID and result state."""
NOT_GENERATED = ("5550192", "5550199")
"""The sandbox's provider failure (502 by design) and its slow number (it waits): no property of the document."""
STYLES = ("+1{a}{e}{l}", "({a}) {e}-{l}", "{a}-{e}-{l}", "{a}.{e}.{l}", "1 {a} {e} {l}", "+1 {a}-{e}-{l}")
"""Common ways to write a US number, all accepted (the contract: "US number in any common format")."""


def _written(area_code: int, exchange: int, line: int, style: str) -> str:
    return style.format(a=area_code, e=exchange, l=f"{line:04d}")


def _answers_at_once(text: str) -> bool:
    digits = "".join(char for char in text if char.isdigit())
    return not digits.endswith(NOT_GENERATED)


US_NUMBERS = st.one_of(
    st.sampled_from(SANDBOX_NUMBERS),
    st.builds(
        _written,
        st.sampled_from(_us_area_codes()),
        st.integers(200, 999),
        st.integers(0, 9999),
        st.sampled_from(STYLES),
    ).filter(_answers_at_once),
)
schemathesis.openapi.format("phone-number", US_NUMBERS)


@schemathesis.hook
def filter_query(context: schemathesis.HookContext, query: dict[str, Any] | None) -> bool:
    """`GET /usage`: `from` after `to` (today when `to` is absent) is refused (400), a rule across two parameters
    that no schema can say."""
    if context.operation is None or context.operation.path != "/v1/usage" or not query:
        return True
    start, end = query.get("from"), query.get("to", datetime.now(UTC).date().isoformat())
    return not (isinstance(start, str) and isinstance(end, str) and start > end)


# The test.


@contextmanager
def database_settings(kind: str) -> Iterator[dict[str, str]]:
    """`up`'s own SQLite file, or a fresh PostgreSQL database (dropped afterwards) when the suite has one."""
    if kind == "sqlite":
        yield {}
        return
    database = fresh_postgres_database(PG_URL or "")
    with ThreadPoolExecutor(1) as thread:  # its own event loop, away from the test session's
        url = thread.submit(asyncio.run, database.__aenter__()).result()
        try:
            yield {"SIGNALYARD_DATABASE_URL": url}
        finally:
            thread.submit(asyncio.run, database.__aexit__()).result()


@pytest.fixture(params=DATABASES)
def phone_up(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Up]:
    # The rate limit (50/second by default) would answer most of the run with 429: still documented, but nothing else
    # would be tested.
    with database_settings(request.param) as database:
        running = Up(
            tmp_path, free_port(), {"SIGNALYARD_PHONE_RATE_LIMIT": "100000/second", **database}, services="phone"
        )
        yield running
        if running.process.poll() is None:
            running.stop()


def _warm_up(base: str, key: str) -> None:
    """Wait for the processors' consumer group (a few seconds after start-up), so that every verify completes."""
    deadline = time.monotonic() + 60
    while True:
        response = httpx.post(
            f"{base}/v1/verify",
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "warm-up"},
            json={"phone": "+14155550100", "name": "John Smith", "subject_type": "person"},
            timeout=30,
        )
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert response.status_code == 200, response.text


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_schemathesis_finds_no_failure_in_the_phone_api(
    phone_up: Up, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    base = f"http://127.0.0.1:{phone_up.port}"
    _warm_up(base, phone_up.key)
    examples = examples_on(request, "phone_up", MAX_EXAMPLES)
    run_schemathesis(base, f"Authorization: Bearer {phone_up.key}", examples, phone_up, tmp_path)


FAST_FAILING_DNS = {"RES_OPTIONS": "timeout:1 attempts:2"}
"""The webhook endpoints' test route answers once its delivery's attempt ends, and the run's webhooks point at the
documents' examples (hooks.example.com), which the test machine cannot resolve. A DNS query the resolver drops makes
glibc wait its 5 s timeout before asking again: one such attempt answered in 10.2 s, past schemathesis's 10 s
response limit in a CI run. The stack under test gives up on a query after 1 s."""


def examples_on(request: pytest.FixtureRequest, fixture: str, examples: int) -> int:
    """`examples` on SQLite; ON_POSTGRESQL times fewer on PostgreSQL (the `fixture`'s database)."""
    return examples if request.node.callspec.params[fixture] == "sqlite" else max(5, examples // ON_POSTGRESQL)


def run_schemathesis(base: str, header: str, max_examples: int, up: Up, tmp_path: Path, *options: str) -> None:
    """`st run` against the service's document with every check (and these `options`), this module as its hooks;
    then nothing the run sent may have made the service log an unhandled error."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{base}/docs/openapi.json",
        "--header",
        header,
        "--checks",
        "all",
        *options,
        "--max-examples",
        str(max_examples),
        "--seed",
        str(SEED),
        "--generation-database",
        "none",
        # filter_headers drops the negative cases that only add an unknown header: of an operation with nothing but
        # a path parameter and a header to break, most, which this health check would count against the run
        "--suppress-health-check",
        "filter_too_much",
        "--workers",
        "1",  # CPython 3.11.7's ast.parse is not thread-safe (gh-106905), and hypothesis parses lambdas with it
        "--request-timeout",
        "30",
        "--no-color",
    ]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = os.environ | {"SCHEMATHESIS_HOOKS": __name__, "PYTHONPATH": path}
    workdir = tmp_path / "schemathesis"  # where it keeps its crash cache
    workdir.mkdir()
    run = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    print(output[output.rfind("SUMMARY") :])  # what was tested (pytest -s, or -rP)
    assert "unhandled_error" not in up.log.read_text(), up.log.read_text()


@pytest.fixture(params=DATABASES)
def photo_up(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Up, int, str]]:
    """`up` with a sandbox key whose limits allow the whole run (the default 100 a minute would answer it with 429)."""
    photo_port = free_port()
    with database_settings(request.param) as database:
        settings = {"SIGNALYARD_PHOTO_PORT": str(photo_port), **database, **FAST_FAILING_DNS}
        running = Up(tmp_path, free_port(), settings, services="photo")
        key = (tmp_path / "demo-photo-sandbox-key").read_text().strip()
        keys = httpx.get(f"http://127.0.0.1:{photo_port}/api/v1/api-keys", headers={"X-API-Key": key}).json()["data"]
        key_id = next(item["id"] for item in keys if key.startswith(item["key_prefix"][:-1]))
        env = os.environ | {"SIGNALYARD_DATA_DIR": str(tmp_path), **database}
        subprocess.run(
            [sys.executable, "-m", "signalyard.cli", "customers", "key-limits", key_id, "--per-minute", "1000000",
             "--per-hour", "100000000"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        yield running, photo_port, key
        if running.process.poll() is None:
            running.stop()


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_schemathesis_finds_no_failure_in_the_photo_api(
    photo_up: tuple[Up, int, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    up, port, key = photo_up
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # the processors' consumer group joins a few seconds after start-up
        files = {"image": ("warm-up.jpg", _JPEG, "image/jpeg")}
        response = httpx.post(
            f"{base}/v1/verify", headers={"X-API-Key": key}, files=files, data={"policy": "icao"}, timeout=30
        )
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert response.status_code == 200, response.text
    run_schemathesis(
        base,
        f"X-API-Key: {key}",
        examples_on(request, "photo_up", PHOTO_MAX_EXAMPLES),
        up,
        tmp_path,
        # The coverage phase does not run the hooks above, so it would send a byte string that is no image, reuse one
        # Idempotency-Key with different bodies (422 by design), and an unnamed header as a "negative" case (HTTP
        # allows them): the other three phases run every check with the hooks.
        "--phases",
        "examples,fuzzing,stateful",
        # map_case must turn a generated image field into an image, and so it also turns some negative cases into valid
        # requests, which the server then rightly accepts: negative data is checked by tests/contract/photo instead.
        "--exclude-checks",
        "negative_data_rejection",
    )


@pytest.fixture(params=DATABASES)
def helpdesk_up(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Up, int, str]]:
    """`up` with a `*` key whose limits allow the whole run (600 a minute by default), made by the operator command."""
    port = free_port()
    with database_settings(request.param) as database:
        settings = {"SIGNALYARD_HELPDESK_PORT": str(port), **database, **FAST_FAILING_DNS}
        running = Up(tmp_path, free_port(), settings, services="helpdesk")
        env = os.environ | {"SIGNALYARD_DATA_DIR": str(tmp_path), **database}

        def cli(*words: str) -> str:
            done = subprocess.run([sys.executable, "-m", "signalyard.cli", "helpdesk", *words], env=env, check=True,
                                  capture_output=True, text=True)  # fmt: skip
            return done.stdout

        organization = cli("organizations").splitlines()[1].split("\t")[0]
        key = cli("keys", "create", organization, "--scope", "*", "--per-minute", "1000000", "--per-hour", "100000000")
        yield running, port, key.splitlines()[-1]
        if running.process.poll() is None:
            running.stop()


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_schemathesis_finds_no_failure_in_the_helpdesk_api(
    helpdesk_up: tuple[Up, int, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    up, port, key = helpdesk_up
    examples = examples_on(request, "helpdesk_up", HELPDESK_MAX_EXAMPLES)
    run_schemathesis(f"http://127.0.0.1:{port}", f"Authorization: Bearer {key}", examples, up, tmp_path)


# Hooks of the photo run: what the document can say but not generate.

_JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/"
    "wAALCAABAAEBAREA/8QAFAABAAAAAAAAAAAAAAAAAAAACf/EABQQAQAAAAAAAAAAAAAAAAAAAAD/2gAIAQEAAD8AKp//2Q=="
)
"""A 1x1 JPEG: an image, which random bytes are not (`format: binary` cannot say "a JPEG, PNG or WebP")."""


def _photo_operation(context: schemathesis.HookContext, method: str, path: str) -> bool:
    operation = context.operation
    return operation is not None and operation.method.upper() == method and operation.path == path


@schemathesis.hook
def map_case(context: schemathesis.HookContext, case: Any) -> Any:
    """POST /v1/verify: a generated image (a file in multipart, a string in JSON) is an image; what is not a file or
    a string is a negative case and stays as generated."""
    if _photo_operation(context, "POST", "/v1/verify") and isinstance(case.body, dict) and "image" in case.body:
        if case.media_type == "multipart/form-data" and isinstance(case.body["image"], bytes | str):
            case.body = case.body | {"image": _JPEG}
        elif isinstance(case.body["image"], str):
            case.body = case.body | {"image": base64.b64encode(_JPEG).decode()}
    return case


schemathesis.openapi.format(
    "future-date-time",
    st.datetimes(min_value=datetime(2030, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)).map(
        lambda at: at.isoformat()
    ),
)


@schemathesis.hook
def map_headers(context: schemathesis.HookContext, headers: dict[str, str] | None) -> dict[str, str] | None:
    """Generated Idempotency-Keys repeat across different bodies (422 by design): make each case's key its own."""
    if headers and "Idempotency-Key" in headers and _photo_operation(context, "POST", "/v1/verify"):
        return headers | {"Idempotency-Key": f"{uuid.uuid4().hex}{headers['Idempotency-Key']}"[:255]}
    return headers


@schemathesis.hook
def filter_headers(context: schemathesis.HookContext, headers: dict[str, str] | None) -> bool:
    """Not a negative case: HTTP lets a request carry headers an API does not name (proxies add them), so an extra
    header is never grounds for a 400."""
    return not headers or not any(name.lower().startswith("x-schemathesis-unknown") for name in headers)


@schemathesis.hook
def filter_body(context: schemathesis.HookContext, body: Any) -> bool:
    """A rule no schema can say: a webhook URL on a public host (not an address), with a real port."""
    if not isinstance(body, dict):
        return True
    if _photo_operation(context, "POST", "/api/v1/webhooks") and isinstance(body.get("url"), str):
        parts = urlsplit(body["url"])
        try:
            ipaddress.ip_address(parts.hostname or "")
            return False
        except ValueError:
            pass
        try:
            return parts.port is None or parts.port > 0
        except ValueError:
            return False
    return True
