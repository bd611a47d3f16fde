"""The probe under a hostile page and a careless client, against the real command on a free loopback port:
store strings shown as text in headless Chromium (a sweep named by a policy file whose name is markup),
Host / Origin / token checks, body size and JSON depth limits, the bounded job queue, jobs dropped or
stopped when their client goes away, one answer for every policy file the probe may not open, and a
worker restarted after a timeout warmed before its next job.

The store holds one small Ant sweep of the committed ant_v0 policy copied to a file named with markup.
The server renders clips at 1920 x 1080 (each view): a clip then takes about 14 s, long enough to hold
the worker while the queue is filled and its clients leave.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from policylab.report.browser import Session
from policylab.rollout.store import Store
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.probe_server import MAX_BODY, MAX_DEPTH, MAX_JOBS
from tests.support.boundary_fixtures import cli
from tests.support.probe_page import page_token, post, start_probe, stop_probe

pytestmark = pytest.mark.slow

MARKUP = "<img src=x onerror=document.title=1>"  # a file name Linux accepts, and HTML an image with a handler
TITLE = "policylab boundary probe"
BIG = ("--width", "1920", "--height", "1080")


def _world(index: int, save: bool = False) -> dict:
    return {
        "map": MARKUP,
        "checkpoint": MARKUP,
        "seed_index": index,
        "save": save,
        "world": {"mu": 0.8, "push_pct": 100, "push_dir": 90, "push_t0": 2.0},
    }


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("guard")
    policy = base / "checkpoints" / f"{MARKUP}.npz"
    policy.parent.mkdir()
    shutil.copyfile(CHECKPOINT_DIR / "ant_v0.npz", policy)
    res = cli(
        "sweep",
        "--robot",
        "ant",
        "--checkpoint",
        policy,
        "--mu-min",
        0.65,
        "--mu-max",
        1.0,
        "--n-mu",
        2,
        "--push-min",
        50,
        "--push-max",
        300,
        "--n-push",
        2,
        "--seeds-per-cell",
        2,
        "--store",
        base / "store",
        "--out",
        base / "sweep",
    )
    assert res.returncode == 0, res.stderr
    return base


@pytest.fixture(scope="module")
def probe(base):
    """(address, token, out folder) of one server for the module; it must stop cleanly, with no traceback."""
    out = base / "probe-out"
    proc, url = start_probe(base / "store", out, *BIG)
    try:
        yield url, page_token(url), out
    finally:
        rest, err = stop_probe(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err


def _ask(
    url: str, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"", chunked: bool = False
) -> tuple[int, dict, str]:
    """One request with exactly these headers (Host included: the URL's unless given): status, headers, body."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in {"Host": where.netloc, **(headers or {})}.items():
            conn.putheader(k, v)
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            for at in range(0, len(body), 8192):
                part = body[at : at + 8192]
                conn.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            conn.send(b"0\r\n\r\n")
        else:
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
        res = conn.getresponse()
        return res.status, dict(res.getheaders()), res.read().decode()
    finally:
        conn.close()


def _error(text: str) -> str:
    line = json.loads(text)["error"]
    assert "\n" not in line
    return line


def test_store_strings_are_text_in_the_page(probe):
    """A sweep named `<img src=x onerror=...>` (its policy file's name) is shown as those characters: no
    element is made of it and its handler never runs."""
    url, _, _ = probe
    with Session() as page:
        page.open(url)
        page.wait_for("document.body && document.body.dataset.ready", timeout=120)
        assert page.evaluate("[...document.getElementById('sweep').options].map(o => o.value)") == [MARKUP]
        page.evaluate("document.querySelector('rect.cell').dispatchEvent(new MouseEvent('click'))")
        assert page.evaluate("document.querySelector('#cell p').textContent").startswith(f"{MARKUP}: ")
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        # a request of the page's own, answered after any image's failed load would have run its handler
        assert page.evaluate("fetch('/x').then(() => document.title)") == TITLE
        # a world of the cell, run: its outcome and downloads under the same name
        page.evaluate("document.querySelector('#cell-worlds button.run-world').click()")
        page.wait_for("document.getElementById('outcome').dataset.status", timeout=120)
        assert page.evaluate("document.getElementById('outcome').textContent").startswith(f"{MARKUP}: ")
        assert page.evaluate("fetch(document.getElementById('dl-npz').href).then(r => r.status)") == 200
        assert (
            page.evaluate("document.querySelectorAll('img').length") == 0 and page.evaluate("document.title") == TITLE
        )


def test_only_this_machines_address_and_the_pages_origin_are_answered(probe):
    url, token, _ = probe
    port = urlsplit(url).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert _ask(url, "GET", "/api/maps", {"Host": host})[0] == 200, host
    assert _ask(url, "GET", "/api/maps", {"Origin": f"http://127.0.0.1:{port}"})[0] == 200
    # a name another site's DNS points at 127.0.0.1 (DNS rebinding): neither the maps nor the page's token
    for host in (f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1"):
        for path in ("/api/maps", "/"):
            status, _, text = _ask(url, "GET", path, {"Host": host})
            assert status == 403 and _error(text).startswith(f"host: {host!r} is not this probe's address"), host
            assert token not in text
    status, _, text = _ask(url, "GET", "/api/maps", {"Origin": "http://evil.example"})
    assert status == 403 and _error(text).startswith("origin: 'http://evil.example'")
    status, headers, text = _ask(url, "GET", "/")
    csp = headers["content-security-policy"]
    assert status == 200 and token in text
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and headers["cache-control"] == "no-store"


def test_a_request_that_changes_anything_needs_the_pages_token(base, probe):
    """What a cross-site form or `text/plain` POST can send (no custom header) runs nothing and writes nothing."""
    url, token, out = probe
    body = json.dumps(_world(5, save=True)).encode()
    with Store(base / "store") as s:
        before = s.fingerprint()
    files = set(out.iterdir())
    for headers in (
        {"Content-Type": "text/plain"},
        {"Content-Type": "text/plain", "Origin": "http://evil.example"},
        {"Content-Type": "application/json", "X-Probe-Token": "guessed"},
        {"Content-Type": "application/json", "X-Probe-Token": token, "Origin": "null"},
    ):
        status, _, text = _ask(url, "POST", "/api/run", headers, body)
        assert status == 403, headers
        assert _error(text).split(":")[0] in ("token", "origin"), text
    assert set(out.iterdir()) == files
    with Store(base / "store") as s:
        assert s.fingerprint() == before
    status, _, text = _ask(url, "POST", "/api/run", {"Content-Type": "text/plain", "X-Probe-Token": token}, body)
    assert status == 200 and json.loads(text)["saved"] is True  # the same request, from the page, runs


def test_bodies_past_the_limits_are_bad_input(probe):
    url, token, _ = probe
    auth = {"X-Probe-Token": token, "Content-Type": "application/json"}
    too_big = f"body: is larger than {MAX_BODY:,} bytes"
    # a declared 300 MB: refused before it is sent (the server does not wait for it)
    where = urlsplit(url)
    with socket.create_connection((where.hostname, where.port), timeout=30) as s:
        s.sendall(
            f"POST /api/run HTTP/1.1\r\nHost: {where.netloc}\r\nX-Probe-Token: {token}\r\n"
            f"Content-Length: 300000000\r\n\r\n".encode()
            + b"{" * 1000
        )
        res = http.client.HTTPResponse(s)
        res.begin()
        assert (res.status, _error(res.read().decode())) == (400, too_big)
    status, _, text = _ask(url, "POST", "/api/run", auth, b" " * (MAX_BODY + 1), chunked=True)  # no length said
    assert (status, _error(text)) == (400, too_big)
    deep = f"body: is nested deeper than {MAX_DEPTH} levels"
    status, _, text = _ask(url, "POST", "/api/run", auth, b"[" * 30_000 + b"]" * 30_000)
    assert (status, _error(text)) == (400, deep)  # deeper than the JSON parser's recursion
    nested = json.dumps({**_world(0), "world": json.loads('{"mu":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH)})
    status, _, text = _ask(url, "POST", "/api/run", auth, nested.encode())
    assert (status, _error(text)) == (400, deep)


def _send(url: str, path: str, body: bytes, token: str) -> socket.socket:
    """A POST sent and left waiting for its answer (the caller closes it: its client goes away)."""
    where = urlsplit(url)
    s = socket.create_connection((where.hostname, where.port), timeout=60)
    s.sendall(
        f"POST {path} HTTP/1.1\r\nHost: {where.netloc}\r\nX-Probe-Token: {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return s


def test_the_queue_is_bounded_and_the_jobs_of_clients_gone_are_dropped(base, probe):
    """With a clip rendering, `MAX_JOBS` jobs in all are taken and one more is 503 at once; when their
    clients leave, the running clip is stopped and the queued run (asked to be saved) never runs."""
    url, token, out = probe
    before = {p.name for p in out.iterdir()}
    status, ran = post(url + "api/run", _world(0), token)
    assert status == 200, ran
    render = f"/api/render/{quote(ran['run_id'], safe='')}"
    saved = json.dumps(_world(1, save=True)).encode()
    clients = [_send(url, render, b"{}", token), _send(url, "/api/run", saved, token)]
    clients += [_send(url, render, b"{}", token) for _ in range(MAX_JOBS - 2)]
    time.sleep(1.0)  # the server reads them all (a clip takes about 14 s)
    status, _, text = _ask(url, "POST", render, {"X-Probe-Token": token}, b"{}")
    assert (status, _error(text)) == (
        503,
        f"busy: {MAX_JOBS} runs and clips are queued or running; try again when one has ended",
    )
    for c in clients:
        c.close()
    for _ in range(100):  # the places free as the server reads that their clients have gone
        status, later = post(url + "api/run", _world(2), token)
        if status != 503:
            break
        time.sleep(0.1)
    assert status == 200, later
    # world 1 never ran, and the clip was stopped, not finished
    assert {p.name for p in out.iterdir()} - before <= {ran["npz"], later["npz"]}
    with Store(base / "store") as s:
        assert not [r for r in s.records("boundary") if r.data["world"].get("probe", {}).get("index") == 1]


def test_policy_files_the_probe_may_not_open_read_alike(base, probe, tmp_path):
    """Any path outside the folder that holds the store and the committed checkpoints, there or not, and any
    path in them that is not a policy file, gets one same answer."""
    url, token, _ = probe
    shutil.copyfile(CHECKPOINT_DIR / "ant_v0.npz", tmp_path / "real.npz")
    (base / "link.npz").symlink_to(tmp_path / "real.npz")
    answers = set()
    for path in (
        tmp_path / "real.npz",
        tmp_path / "missing.npz",
        tmp_path,
        Path("/etc/passwd"),
        base / "link.npz",
        base / "missing.npz",
        base / "store",
        "real.npz\0",
    ):
        status, body = post(url + "api/run", {**_world(0), "checkpoint": None, "policy_file": str(path)}, token)
        answers.add((status, body["error"]))
    folder = base.resolve()
    assert answers == {(400, f"policy_file: not a .npz or .onnx file under {folder} or {CHECKPOINT_DIR.resolve()}")}
    status, body = post(
        url + "api/run",
        {**_world(0), "checkpoint": None, "policy_file": str(base / "checkpoints" / f"{MARKUP}.npz")},
        token,
    )
    assert status == 200, body


def test_a_worker_restarted_after_a_timeout_is_warmed_before_its_next_job(base, tmp_path):
    """A clip past `--timeout 3` is stopped (504); the fresh worker warms up (seconds: imports and a render
    context) before the next run, whose 3 s count from then (a warm Ant run takes 0.1 s)."""
    proc, url = start_probe(base / "store", tmp_path / "out", "--timeout", "3", *BIG)
    try:
        token = page_token(url)
        status, ran = post(url + "api/run", _world(0), token)
        assert status == 200, ran
        status, body = post(url + f"api/render/{quote(ran['run_id'], safe='')}", {}, token)
        assert (status, body["error"]) == (504, "the render job took longer than 3 s and was stopped")
        for index in (1, 2):
            status, body = post(url + "api/run", _world(index), token)
            assert status == 200, body
    finally:
        stop_probe(proc)


def test_an_address_other_than_loopback_is_bad_input(base, tmp_path):
    """The probe answers its loopback address only, so it listens on no other (checked before it binds: the
    port here is taken, which a probe that went on to bind would report instead)."""
    with socket.create_server(("0.0.0.0", 0)) as taken:
        res = cli(
            "probe",
            "--store",
            base / "store",
            "--host",
            "0.0.0.0",
            "--port",
            taken.getsockname()[1],
            "--out",
            tmp_path / "out",
        )
    assert res.returncode == 2 and not (tmp_path / "out").exists()
    assert res.stderr.strip() == (
        "policylab: error: host: '0.0.0.0' is not a loopback address (127.0.0.1, ::1, "
        "localhost): the probe answers this machine only"
    )
