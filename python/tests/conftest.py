"""Fixtures for kwire's Python tests against a real broker.

KWIRE_BOOTSTRAP (host:port of a plaintext listener) selects the broker; the
broker tests skip when it is unset. KWIRE_SECURE_ENV names the KEY=VALUE file
`scripts/kafka start --secure` writes (ports, CA, user); the SASL_SSL tests
skip without it. KWIRE_POSTGRES_ENV names scripts/postgres's; the PostgreSQL
tests skip without it.
"""

import os
import time
import uuid

import pytest


@pytest.fixture(scope="session")
def bootstrap():
    value = os.environ.get("KWIRE_BOOTSTRAP")
    if not value:
        pytest.skip("KWIRE_BOOTSTRAP not set (start a broker with scripts/kafka start)")
    return value


def read_env_file(path):
    """The KEY=VALUE lines of a file the scripts write (secure.env, postgres.env)."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" in line:
                k, v = line.split("=", 1)
                env[k] = v
    return env


@pytest.fixture(scope="session")
def secure_env():
    path = os.environ.get("KWIRE_SECURE_ENV")
    if not path:
        pytest.skip("KWIRE_SECURE_ENV not set (start the broker with scripts/kafka start --secure)")
    return read_env_file(path)


@pytest.fixture(scope="session")
def postgres_env():
    """scripts/postgres start's env file (KWIRE_POSTGRES_ENV names it)."""
    path = os.environ.get("KWIRE_POSTGRES_ENV")
    if not path:
        pytest.skip("KWIRE_POSTGRES_ENV not set (scripts/postgres start writes postgres.env)")
    return read_env_file(path)


@pytest.fixture(scope="session")
def admin(bootstrap):
    import kwire

    a = kwire.Admin({"bootstrap.servers": bootstrap})
    yield a
    a.close()


@pytest.fixture
def new_topic(admin):
    """new_topic(partitions=1) -> a fresh topic name."""

    def make(partitions=1):
        name = "py-" + uuid.uuid4().hex[:12]
        admin.create_topics([(name, partitions)])
        return name

    return make


@pytest.fixture
def producer(bootstrap):
    import kwire

    p = kwire.Producer({"bootstrap.servers": bootstrap})
    yield p
    p.close()


def recent_ms(offset_ms=0):
    """A record timestamp an hour ago (whole seconds, plus offset_ms): recent
    enough that the test broker's retention (7 days, checked every 10 s)
    never deletes the records under a running test."""
    return (int(time.time()) - 3600) * 1000 + offset_ms


_REGISTRY_SERVER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "registry", "registry_server.py")


@pytest.fixture
def schema_registry(tmp_path):
    """schema_registry(user=None) -> the URL of a fresh test Schema Registry
    (tests/registry/registry_server.py on 127.0.0.1), stopped after the test."""
    import subprocess
    import sys

    started = []

    def start(user=None, tls=False):
        """tls=True: https with a certificate for 127.0.0.1 signed by a new CA,
        whose PEM file is start.ca afterwards."""
        port_file = tmp_path / ("registry-port-%d" % len(started))
        cmd = [sys.executable, _REGISTRY_SERVER, "--port-file", str(port_file)]
        if user:
            cmd += ["--user", user]
        if tls:
            d = tmp_path / ("registry-tls-%d" % len(started))
            d.mkdir()
            run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)  # noqa: E731
            run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                "/CN=kwire-registry-ca", "-keyout", "ca.key", "-out", "ca.pem")
            run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
                "-out", "server.csr")
            (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
            run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", "san.ext", "-out", "server.pem")
            cmd += ["--tls", str(d / "server.pem"), str(d / "server.key")]
            start.ca = str(d / "ca.pem")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        deadline = time.monotonic() + 10
        while not port_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test schema registry did not start")
            time.sleep(0.02)
        return "%s://127.0.0.1:%s" % ("https" if tls else "http", port_file.read_text())

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except Exception:
            proc.kill()
            proc.wait()
