#!/usr/bin/python3
"""Raw HTTP/2 edge cases against kgpu's device-plugin socket, driven by python3-h2 (Debian).

kgpu serves gRPC over its own HTTP/2 transport (src/rpc, on nghttp2). Its unit tests use nghttp2's
client; this program judges the transport with another implementation of the client side, the
python3-h2 state machine, for what a gRPC library never sends but a kubelet of another version, a
broken tool or an attacker can (issues 26 and 27):

  1. :authority as kubelets 1.19-1.25 send it (the socket path), percent-encoded, "localhost",
     empty, absent and 4 KiB long: GetDevicePluginOptions is served (200, grpc-status 0).
  2. A malformed header block (duplicated :path, pseudo-header after a regular one, uppercase
     name): RST_STREAM(PROTOCOL_ERROR) for that stream, the connection goes on.
  3. An HPACK bomb (a block decoding past SETTINGS_MAX_HEADER_LIST_SIZE, 16 KiB):
     GOAWAY(ENHANCE_YOUR_CALM).
  4. Two request messages, or none, on a unary call: grpc-status 12 (UNIMPLEMENTED).
  5. grpc-encoding gzip: grpc-status 12 with grpc-accept-encoding identity; :method GET: 405.
  6. A 129th concurrent stream: RST_STREAM(REFUSED_STREAM), the connection goes on.
  7. A PING flood: GOAWAY before the close, not a bare EOF.
  8. grpc-timeout on ListAndWatch: the stream ends with grpc-status 4 (DEADLINE_EXCEEDED).
  9. /metrics counts the streams reset with PROTOCOL_ERROR.

It starts `kgpu kubelet-sim` (the kubelet stand-in) and `kgpu plugin` on the fake NVML (DGX A100
fleet) in a temporary folder, kills both on exit (also on failure, SIGTERM, or when this process
dies: PR_SET_PDEATHSIG), reads every answer with a deadline, and exits non-zero on any failure.
Only the Python standard library and h2 are used.

  raw_h2_test.py --kgpu BUILD/src/cli/kgpu --fake-nvml BUILD/tests/fake-nvml \
                 --fixtures tests/fixtures [unittest arguments, e.g. -v RawH2.test_6_concurrent_stream_limit]

(ctest -R interop.h2 runs it; the paths may also come from KGPU_BINARY, KGPU_FAKE_NVML_DIR and
KGPU_FIXTURES_DIR; KGPU_E2E_BINARY, as for the e2e tests, overrides --kgpu.)
"""

import argparse
import atexit
import ctypes
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import h2.config
import h2.connection
import h2.events
import h2.exceptions

# HTTP/2 error codes (RFC 9113 §7).
NO_ERROR = 0
PROTOCOL_ERROR = 1
REFUSED_STREAM = 7
ENHANCE_YOUR_CALM = 11

# gRPC status codes.
GRPC_OK = 0
GRPC_DEADLINE_EXCEEDED = 4
GRPC_UNIMPLEMENTED = 12

SOCKET_NAME = "kgpu-nvidia.com-gpu.sock"
OPTIONS_PATH = b"/v1beta1.DevicePlugin/GetDevicePluginOptions"
LIST_AND_WATCH_PATH = b"/v1beta1.DevicePlugin/ListAndWatch"
EMPTY_MESSAGE = b"\x00\x00\x00\x00\x00"  # a gRPC frame: uncompressed, 0 bytes (google.protobuf.Empty)
KUBELET_AUTHORITY = b"/var/lib/kubelet/device-plugins/kgpu-nvidia.com-gpu.sock"

START_TIMEOUT = 30.0  # kgpu up and its socket accepting
READ_TIMEOUT = 10.0   # any one expected answer
MAX_STREAMS = 128     # ServerConnection::kMaxStreams
MAX_HEADER_LIST = 16 * 1024  # kMaxHeaderListBytes, what kgpu advertises

CONFIG = {}  # paths, from the command line or the environment (main())


# ---------------------------------------------------------------- children

class Children:
    """The processes this program started; killed, by their own pids, on every way out."""

    def __init__(self):
        self.procs = []
        self.tmp = None
        self.keep_tmp = False
        self.stopped = set()  # children a case ended on purpose

    def start(self, name, argv, env=None):
        with open(os.path.join(self.tmp, name + ".stdout"), "wb") as out, \
                open(os.path.join(self.tmp, name + ".stderr"), "wb") as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                    cwd=self.tmp, preexec_fn=_die_with_parent)
        self.procs.append((name, proc))
        return proc

    def log(self, name):
        try:
            with open(os.path.join(self.tmp, name + ".stderr"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, name, timeout):
        """SIGTERM to child `name`; its exit code, or None if it is still running after `timeout`."""
        for n, proc in self.procs:
            if n == name:
                proc.send_signal(signal.SIGTERM)
                try:
                    return proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    return None
        raise KeyError(name)

    def kill_all(self):
        for _, proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.kill()
                except OSError:
                    pass
        for _, proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []

    def cleanup(self):
        self.kill_all()
        if self.tmp and not self.keep_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


CHILDREN = Children()


def _die_with_parent():
    # In the child, before exec: SIGKILL when this test program dies, even by SIGKILL (ctest's timeout).
    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _on_signal(signum, _frame):
    CHILDREN.cleanup()
    os._exit(128 + signum)


# ---------------------------------------------------------------- an h2 client over a unix socket

class Stream:
    def __init__(self):
        self.headers = None   # [(name, value)] of the response HEADERS (bytes)
        self.trailers = None
        self.data = bytearray()
        self.ended = False
        self.reset = None     # RST_STREAM error code the server sent
        self.opened_at = time.monotonic()
        self.closed_at = None

    @property
    def closed(self):
        return self.ended or self.reset is not None

    def field(self, name, where=None):
        blocks = [where] if where is not None else [self.trailers, self.headers]
        for block in blocks:
            for k, v in block or []:
                if k == name:
                    return v
        return None

    def grpc_status(self):
        """From the trailers, or from a trailers-only response's HEADERS."""
        value = self.field(b"grpc-status")
        return int(value) if value is not None else None

    def messages(self):
        """The gRPC messages in the body: [(compressed flag, bytes)]; AssertionError on a torn frame."""
        out, buf = [], bytes(self.data)
        while buf:
            if len(buf) < 5:
                raise AssertionError("response body ends inside a gRPC message prefix: %r" % buf)
            length = int.from_bytes(buf[1:5], "big")
            if len(buf) < 5 + length:
                raise AssertionError("response body ends inside a %d-byte gRPC message" % length)
            out.append((buf[0], buf[5:5 + length]))
            buf = buf[5 + length:]
        return out

    def describe(self):
        return "headers=%r trailers=%r body=%d bytes ended=%s reset=%s" % (
            self.headers, self.trailers, len(self.data), self.ended, self.reset)


class Client:
    """One HTTP/2 connection to kgpu's socket. h2 sends header blocks exactly as given (no
    normalisation, no validation), so a test can send what a well-behaved client never would."""

    def __init__(self, path, timeout=READ_TIMEOUT):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(
            client_side=True, header_encoding=None, validate_outbound_headers=False,
            normalize_outbound_headers=False, validate_inbound_headers=True))
        self.streams = {}
        self.terminated = None  # the ConnectionTerminated event (GOAWAY received)
        self.eof = False
        self.eof_error = None   # an OSError instead of a clean EOF (e.g. ECONNRESET)
        self.pings_acked = 0
        self.bytes_after_goaway = 0
        self.sent = 0  # bytes written to the socket
        self.send_error = None
        self.conn.initiate_connection()
        self.flush()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sent += len(data)
            try:
                self.sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError) as e:
                # kgpu closed the connection: what it sent before (a GOAWAY) is still to be read.
                self.send_error = self.send_error or e

    def request(self, headers, body=None, end_stream=True):
        sid = self.conn.get_next_available_stream_id()
        self.streams[sid] = Stream()
        self.conn.send_headers(sid, headers, end_stream=end_stream and body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=end_stream)
        self.flush()
        return sid

    def send_data(self, sid, body, end_stream=True):
        self.conn.send_data(sid, body, end_stream=end_stream)
        self.flush()

    def _handle(self, event):
        sid = getattr(event, "stream_id", None)
        stream = self.streams.get(sid)
        if isinstance(event, h2.events.ResponseReceived):
            stream.headers = list(event.headers)
        elif isinstance(event, h2.events.TrailersReceived):
            stream.trailers = list(event.headers)
        elif isinstance(event, h2.events.DataReceived):
            stream.data += event.data
            if event.flow_controlled_length:
                self.conn.acknowledge_received_data(event.flow_controlled_length, sid)
        elif isinstance(event, h2.events.StreamEnded):
            stream.ended = True
            stream.closed_at = time.monotonic()
        elif isinstance(event, h2.events.StreamReset):
            if stream is not None:
                stream.reset = event.error_code
                stream.closed_at = time.monotonic()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated = event
        elif isinstance(event, h2.events.PingAckReceived):
            self.pings_acked += 1

    def read_once(self, deadline):
        """Reads what arrives before `deadline` (one recv) and feeds it to h2; False at EOF."""
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        ready, _, _ = select.select([self.sock], [], [], left)
        if not ready:
            return True
        try:
            data = self.sock.recv(65536)
        except OSError as e:
            self.eof, self.eof_error = True, e
            return False
        if not data:
            self.eof = True
            return False
        if self.terminated:
            self.bytes_after_goaway += len(data)  # nothing may follow a GOAWAY we act on
            return True
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            raise AssertionError("h2 refused what kgpu sent: %r" % e)
        for event in events:
            self._handle(event)
        self.flush()
        return True

    def wait(self, condition, what, timeout=None):
        """Reads until condition() holds; AssertionError (saying what was seen) at the deadline or
        at EOF before it holds."""
        timeout = timeout if timeout is not None else self.timeout
        deadline = time.monotonic() + timeout
        while not condition():
            if self.eof:
                raise AssertionError("connection closed (%s) while waiting for %s; %s" % (
                    self.eof_error or "EOF", what, self.summary()))
            if time.monotonic() >= deadline:
                raise AssertionError("no %s within %.1f s; %s" % (what, timeout, self.summary()))
            self.read_once(deadline)

    def wait_closed(self, sid, timeout=None):
        self.wait(lambda: self.streams[sid].closed, "end of stream %d" % sid, timeout)
        return self.streams[sid]

    def wait_eof(self, timeout=None):
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while not self.eof:
            if time.monotonic() >= deadline:
                raise AssertionError("the connection was not closed within the deadline; " + self.summary())
            self.read_once(deadline)

    def ping_roundtrip(self):
        """A PING answered: the connection is alive and served."""
        before = self.pings_acked
        self.conn.ping(b"kgpu-h2!")
        self.flush()
        self.wait(lambda: self.pings_acked > before, "PING ACK")

    def summary(self):
        goaway = None
        if self.terminated:
            goaway = (self.terminated.error_code, self.terminated.last_stream_id, self.terminated.additional_data)
        return "goaway=%r eof=%s(%s) send_error=%s streams={%s}" % (
            goaway, self.eof, self.eof_error, self.send_error, ", ".join(
            "%d: %s" % (sid, s.describe()) for sid, s in sorted(self.streams.items())))


def note(text):
    """What h2 saw, one line per observation (stderr; ctest shows it with -V or on failure)."""
    print("  h2 saw: " + text, file=sys.stderr)


def goaway_text(client):
    t = client.terminated
    if t is None:
        return "no GOAWAY, %s" % (client.eof_error or "EOF")
    return "GOAWAY(error_code=%d, last_stream_id=%d, debug=%r)" % (t.error_code, t.last_stream_id, t.additional_data)


def grpc_headers(path=OPTIONS_PATH, authority=KUBELET_AUTHORITY, method=b"POST", extra=()):
    """A gRPC request's header block; authority None leaves :authority out."""
    headers = [(b":method", method), (b":scheme", b"http"), (b":path", path)]
    if authority is not None:
        headers.append((b":authority", authority))
    headers += [(b"content-type", b"application/grpc"), (b"te", b"trailers")]
    headers += list(extra)
    return headers


def protobuf_fields(message):
    """Top-level (field number, wire type) of a protobuf message, to count repeated fields."""
    fields, i = [], 0

    def varint():
        nonlocal i
        shift = value = 0
        while True:
            if i >= len(message):
                raise AssertionError("protobuf message ends inside a varint")
            b = message[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while i < len(message):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            varint()
        elif wire == 2:
            length = varint()  # not `i += varint()`: that adds to the i from before the varint
            i += length
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise AssertionError("unexpected protobuf wire type %d" % wire)
        fields.append((field, wire))
    if i != len(message):
        raise AssertionError("protobuf message torn")
    return fields


# ---------------------------------------------------------------- kgpu under test

def start_kgpu():
    kgpu, nvml, fixtures = CONFIG["kgpu"], CONFIG["fake_nvml"], CONFIG["fixtures"]
    fleet = os.path.join(fixtures, "fleets", "dgx-a100.yaml")
    for path in (kgpu, fleet, os.path.join(nvml, "libnvidia-ml.so.1")):
        if not os.path.exists(path):
            raise RuntimeError("missing %s (build the kgpu, fake_nvml and kgpu-fake-nvml-fixture targets)" % path)
    CHILDREN.tmp = tempfile.mkdtemp(prefix="kgpu-h2-")
    tmp = CHILDREN.tmp
    plugin_dir = os.path.join(tmp, "dp")
    os.makedirs(plugin_dir)

    # The simulated node's sysfs/proc/dev trees, as tests/e2e/harness.cpp make_fake_node builds them.
    node_args = []
    tool = os.path.join(nvml, "kgpu-fake-nvml-fixture")
    if os.access(tool, os.X_OK):
        node = os.path.join(tmp, "node")
        os.makedirs(node)
        gen = subprocess.run([tool, fleet, node], capture_output=True, timeout=60, preexec_fn=_die_with_parent)
        if gen.returncode != 0:
            raise RuntimeError("kgpu-fake-nvml-fixture failed: %s" % gen.stderr.decode(errors="replace"))
        node_args = ["--sysfs-root", node + "/sys", "--proc-root", node + "/proc", "--dev-root", node]

    env = dict(os.environ)
    env.pop("KGPU_FAKE_NVML_FLEET", None)
    CHILDREN.start("kubelet-sim", [kgpu, "kubelet-sim", "--dir", plugin_dir], env=env)
    wait_for(lambda: os.path.exists(os.path.join(plugin_dir, "kubelet.sock")), "kubelet-sim's kubelet.sock",
             "kubelet-sim")
    env.update(LD_LIBRARY_PATH=nvml, KGPU_FAKE_NVML_FLEET=fleet)
    CHILDREN.start("plugin", [kgpu, "plugin", "--kubelet-socket", os.path.join(plugin_dir, "kubelet.sock"),
                              "--metrics-addr", "127.0.0.1:0"] + node_args, env=env)
    socket_path = os.path.join(plugin_dir, SOCKET_NAME)
    wait_for(lambda: accepts(socket_path), "kgpu's socket " + socket_path, "plugin")
    # The kubelet stand-in holds its ListAndWatch stream through every case, as a kubelet would.
    wait_for(lambda: "nvidia.com/gpu: registered with the kubelet" in CHILDREN.log("plugin"),
             "registration with kubelet-sim", "plugin")
    CONFIG["socket"] = socket_path


def children_alive():
    for name, proc in CHILDREN.procs:
        if proc.poll() is not None and name not in CHILDREN.stopped:
            raise AssertionError("%s exited with %s; its log:\n%s" % (name, proc.returncode, CHILDREN.log(name)))


def wait_for(condition, what, log_of, timeout=START_TIMEOUT):
    """Polls `condition` until it holds; fails at the deadline or when a child has exited."""
    deadline = time.monotonic() + timeout
    while not condition():
        children_alive()
        if time.monotonic() >= deadline:
            raise AssertionError("no %s within %.0f s; %s log:\n%s" % (what, timeout, log_of, CHILDREN.log(log_of)))
        time.sleep(0.01)


def accepts(path):
    if not os.path.exists(path):
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def metrics_port():
    port = [0]

    def found():
        m = re.search(r"metrics: serving .* on 127\.0\.0\.1:(\d+)", CHILDREN.log("plugin"))
        port[0] = int(m.group(1)) if m else 0
        return port[0] > 0
    wait_for(found, "metrics address in the plugin's log", "plugin", timeout=READ_TIMEOUT)
    return port[0]


def grpc_error_count(port, scope, code):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=READ_TIMEOUT) as res:
        body = res.read().decode()
    m = re.search(r'^kgpu_grpc_errors_total\{scope="%s",code="%s"\} (\d+)$' % (scope, code), body, re.M)
    return int(m.group(1)) if m else 0


# ---------------------------------------------------------------- the cases

def setUpModule():
    start_kgpu()


def tearDownModule():
    CHILDREN.kill_all()


class RawH2(unittest.TestCase):
    """Numbered so that they run in the order of the brief (unittest sorts by name)."""

    def setUp(self):
        children_alive()

    def tearDown(self):
        children_alive()  # no case may take the daemon (or the kubelet stand-in) down

    def connect(self):
        client = Client(CONFIG["socket"])
        self.addCleanup(client.close)
        return client

    def assert_served(self, client, sid, what):
        stream = client.wait_closed(sid)
        self.assertIsNone(stream.reset, "%s: stream reset; %s" % (what, stream.describe()))
        self.assertIsNotNone(stream.headers, "%s: no response HEADERS; %s" % (what, stream.describe()))
        self.assertEqual(stream.field(b":status", stream.headers), b"200", "%s: %s" % (what, stream.describe()))
        self.assertIsNotNone(stream.trailers, "%s: no trailers (a trailers-only answer?); %s" % (
            what, stream.describe()))
        self.assertEqual(stream.grpc_status(), GRPC_OK, "%s: %s" % (what, stream.describe()))
        messages = stream.messages()
        self.assertEqual(len(messages), 1, "%s: %d response messages; %s" % (what, len(messages), stream.describe()))
        self.assertEqual(messages[0][0], 0, "%s: a compressed response message" % what)
        return stream

    def good_request(self, client, what="a good request"):
        sid = client.request(grpc_headers(), EMPTY_MESSAGE)
        return self.assert_served(client, sid, what)

    def assert_grpc_refusal(self, client, sid, status, what, http_status=b"200"):
        stream = client.wait_closed(sid)
        # kgpu may follow a complete answer with RST_STREAM(NO_ERROR) (stop sending); nothing else.
        self.assertIn(stream.reset, (None, NO_ERROR), "%s: %s" % (what, stream.describe()))
        self.assertTrue(stream.ended, "%s: the answer did not end the stream; %s" % (what, stream.describe()))
        self.assertIsNotNone(stream.headers, "%s: no response HEADERS; %s" % (what, stream.describe()))
        self.assertEqual(stream.field(b":status", stream.headers), http_status, "%s: %s" % (what, stream.describe()))
        self.assertEqual(stream.grpc_status(), status, "%s: %s" % (what, stream.describe()))
        note("%s: :status %s, grpc-status %s, grpc-message %r%s" % (
            what, stream.field(b":status", stream.headers).decode(), stream.grpc_status(),
            stream.field(b"grpc-message"), "" if stream.reset is None else ", then RST_STREAM(%d)" % stream.reset))
        return stream

    # 1 -------------------------------------------------------------------------
    def test_01_authority_values_are_served(self):
        encoded = urllib.parse.quote(KUBELET_AUTHORITY.decode(), safe="").encode()
        self.assertTrue(encoded.startswith(b"%2F"), encoded)
        cases = [
            ("the socket path (kubelets 1.19-1.25)", KUBELET_AUTHORITY),
            ("the socket path percent-encoded", encoded),
            ("localhost (kubelets >= 1.26)", b"localhost"),
            ("empty", b""),
            ("absent", None),
            ("4 KiB", b"/" + b"a" * 4095),
        ]
        for what, authority in cases:
            with self.subTest(authority=what):
                with self.connect() as client:
                    sid = client.request(grpc_headers(authority=authority), EMPTY_MESSAGE)
                    stream = self.assert_served(client, sid, ":authority " + what)
                    note(":authority %s: :status %s, grpc-status %s, %d-byte message" % (
                        what, stream.field(b":status").decode(), stream.grpc_status(), len(stream.messages()[0][1])))
                    self.assertIsNone(client.terminated, client.summary())

    # 2 -------------------------------------------------------------------------
    MALFORMED = [
        ("a duplicated :path", [(b":method", b"POST"), (b":scheme", b"http"), (b":path", OPTIONS_PATH),
                                (b":authority", b"localhost"), (b":path", OPTIONS_PATH),
                                (b"content-type", b"application/grpc"), (b"te", b"trailers")]),
        ("a pseudo-header after a regular header", [(b":method", b"POST"), (b":scheme", b"http"),
                                                    (b"content-type", b"application/grpc"), (b":path", OPTIONS_PATH),
                                                    (b":authority", b"localhost"), (b"te", b"trailers")]),
        ("an uppercase header name", grpc_headers(extra=[(b"X-Kgpu-Upper", b"1")])),
    ]

    def send_malformed(self, client, headers, what):
        """One malformed block: RST_STREAM(PROTOCOL_ERROR) without an answer, the connection lives."""
        sid = client.request(headers, EMPTY_MESSAGE)
        stream = client.wait_closed(sid)
        self.assertEqual(stream.reset, PROTOCOL_ERROR, "%s: %s" % (what, stream.describe()))
        self.assertIsNone(stream.headers, "%s: answered before the reset; %s" % (what, stream.describe()))
        self.assertIsNone(client.terminated, "%s: the connection was ended; %s" % (what, client.summary()))
        note("%s: RST_STREAM(%d) on stream %d, no HEADERS" % (what, stream.reset, sid))

    def test_02_malformed_header_blocks_reset_the_stream_only(self):
        for what, headers in self.MALFORMED:
            with self.subTest(block=what):
                with self.connect() as client:
                    self.send_malformed(client, headers, what)
                    self.good_request(client, "the next request after " + what)
                    self.assertIsNone(client.terminated, client.summary())
        # All three on one connection, then a good request on it.
        with self.connect() as client:
            for what, headers in self.MALFORMED:
                self.send_malformed(client, headers, what)
            self.good_request(client, "a request after three malformed ones")

    # 3 -------------------------------------------------------------------------
    def test_03_hpack_bomb_ends_the_connection_with_enhance_your_calm(self):
        big = b"b" * (20 * 1024)
        entry = b"c" * 4000  # fits HPACK's 4 KiB dynamic table: every repeat is a 1-byte index
        cases = [  # (what, header block, the most bytes it may take on the wire)
            ("one 20 KiB header", grpc_headers(extra=[(b"x-bomb", big)]), 32 * 1024),
            ("a 4 KB header indexed 16 times", grpc_headers(extra=[(b"x-bomb", entry)] * 16), 5 * 1024),
        ]
        for what, headers, wire_bound in cases:
            with self.subTest(block=what):
                decoded = sum(len(k) + len(v) + 32 for k, v in headers)
                self.assertGreater(decoded, MAX_HEADER_LIST)
                with self.connect() as client:
                    client.ping_roundtrip()  # handshake done: what follows is about the block
                    sent = client.sent
                    sid = client.request(headers, EMPTY_MESSAGE)
                    wire = client.sent - sent
                    self.assertLess(wire, wire_bound, "%s took %d bytes on the wire" % (what, wire))
                    client.wait(lambda: client.terminated is not None or client.eof, "GOAWAY")
                    self.assertIsNotNone(client.terminated, "no GOAWAY before the close; " + client.summary())
                    self.assertEqual(client.terminated.error_code, ENHANCE_YOUR_CALM, client.summary())
                    self.assertIsNone(client.streams[sid].headers, "the bomb was answered; " + client.summary())
                    client.wait_eof()
                    self.assertEqual(client.bytes_after_goaway, 0, "frames after the GOAWAY")
                    note("%s (%d bytes decoded from %d on the wire): %s, then EOF" % (
                        what, decoded, wire, goaway_text(client)))
        # Other connections are served as before.
        with self.connect() as client:
            self.good_request(client, "a request after the bombs")

    # 4 -------------------------------------------------------------------------
    def test_04_unary_call_takes_exactly_one_message(self):
        with self.connect() as client:
            sid = client.request(grpc_headers(), EMPTY_MESSAGE + EMPTY_MESSAGE)
            self.assert_grpc_refusal(client, sid, GRPC_UNIMPLEMENTED, "two request messages in one DATA frame")
            sid = client.request(grpc_headers(), EMPTY_MESSAGE, end_stream=False)
            client.send_data(sid, EMPTY_MESSAGE, end_stream=True)
            self.assert_grpc_refusal(client, sid, GRPC_UNIMPLEMENTED, "two request messages in two DATA frames")
            sid = client.request(grpc_headers())  # HEADERS with END_STREAM, no DATA
            self.assert_grpc_refusal(client, sid, GRPC_UNIMPLEMENTED, "no request message")
            sid = client.request(grpc_headers(), b"", end_stream=True)  # an empty DATA frame
            self.assert_grpc_refusal(client, sid, GRPC_UNIMPLEMENTED, "an empty body")
            sid = client.request(grpc_headers(), EMPTY_MESSAGE[:3])  # END_STREAM inside the 5-byte prefix
            stream = client.wait_closed(sid)
            self.assertIn(stream.reset, (None, NO_ERROR), "a torn message: " + stream.describe())
            self.assertIsNotNone(stream.grpc_status(), "a torn message: no grpc-status; " + stream.describe())
            self.assertNotEqual(stream.grpc_status(), GRPC_OK, "a torn message was served: " + stream.describe())
            note("a torn message (END_STREAM after 3 of 5 prefix bytes): grpc-status %s, grpc-message %r" % (
                stream.grpc_status(), stream.field(b"grpc-message")))
            self.good_request(client, "a single message, after the refusals")

    # 5 -------------------------------------------------------------------------
    def test_05_gzip_and_get_are_refused(self):
        with self.connect() as client:
            sid = client.request(grpc_headers(extra=[(b"grpc-encoding", b"gzip")]), EMPTY_MESSAGE)
            stream = self.assert_grpc_refusal(client, sid, GRPC_UNIMPLEMENTED, "grpc-encoding gzip")
            self.assertEqual(stream.field(b"grpc-accept-encoding"), b"identity", stream.describe())
            note("grpc-encoding gzip: grpc-accept-encoding %r" % stream.field(b"grpc-accept-encoding"))
            sid = client.request(grpc_headers(method=b"GET"))
            stream = client.wait_closed(sid)
            self.assertIsNotNone(stream.headers, "GET: " + stream.describe())
            self.assertEqual(stream.field(b":status", stream.headers), b"405", "GET: " + stream.describe())
            self.assertIn(stream.reset, (None, NO_ERROR), "GET: " + stream.describe())
            note(":method GET: :status %s, grpc-status %s, grpc-message %r" % (
                stream.field(b":status").decode(), stream.grpc_status(), stream.field(b"grpc-message")))
            self.good_request(client, "a request after the refusals")

    # 6 -------------------------------------------------------------------------
    def test_06_streams_beyond_the_limit_are_refused_not_the_connection(self):
        with self.connect() as client:
            held = [client.request(grpc_headers(), end_stream=False) for _ in range(MAX_STREAMS)]
            extra = client.request(grpc_headers(), end_stream=False)
            stream = client.wait_closed(extra)
            self.assertEqual(stream.reset, REFUSED_STREAM, "stream %d of %d: %s" % (
                MAX_STREAMS + 1, MAX_STREAMS + 1, stream.describe()))
            client.ping_roundtrip()  # everything kgpu sent for the first 128 has arrived
            self.assertIsNone(client.terminated, client.summary())
            reset = [sid for sid in held if client.streams[sid].closed]
            self.assertEqual(reset, [], "streams within the limit were ended: " + client.summary())
            note("%d open streams held; stream %d (the %dth): RST_STREAM(%d); connection: %s" % (
                MAX_STREAMS, extra, MAX_STREAMS + 1, stream.reset,
                "alive (PING answered)" if client.terminated is None else goaway_text(client)))
            # The held streams are live: finish one, then a new one fits and is served.
            client.send_data(held[0], EMPTY_MESSAGE, end_stream=True)
            self.assert_served(client, held[0], "a held stream finished")
            self.good_request(client, "a new stream once one slot is free")
            self.assertIsNone(client.terminated, client.summary())

    # 7 -------------------------------------------------------------------------
    def test_07_ping_flood_ends_with_goaway(self):
        pings = 1500
        with self.connect() as client:
            client.ping_roundtrip()
            for i in range(pings):
                client.conn.ping(i.to_bytes(8, "big"))
            client.flush()  # all at once, without reading
            client.wait_eof(timeout=READ_TIMEOUT)
            self.assertIsNotNone(client.terminated, "the connection ended in a bare EOF (%s) after %d PING ACKs" % (
                client.eof_error or "EOF", client.pings_acked - 1))
            self.assertEqual(client.terminated.error_code, ENHANCE_YOUR_CALM, client.summary())
            self.assertEqual(client.bytes_after_goaway, 0, "frames after the GOAWAY")
            note("%d PINGs unread: %d PING ACKs, then %s, then EOF" % (
                pings, client.pings_acked - 1, goaway_text(client)))
        with self.connect() as client:
            self.good_request(client, "a request after the flood")

    # 8 -------------------------------------------------------------------------
    def test_08_grpc_timeout_ends_list_and_watch(self):
        with self.connect() as client:
            sid = client.request(grpc_headers(path=LIST_AND_WATCH_PATH, extra=[(b"grpc-timeout", b"100m")]),
                                 EMPTY_MESSAGE)
            stream = client.wait_closed(sid, timeout=READ_TIMEOUT)
            self.assertIsNone(stream.reset, stream.describe())
            self.assertEqual(stream.field(b":status", stream.headers), b"200", stream.describe())
            self.assertIsNotNone(stream.trailers, stream.describe())
            self.assertEqual(stream.grpc_status(), GRPC_DEADLINE_EXCEEDED, stream.describe())
            messages = stream.messages()
            self.assertGreaterEqual(len(messages), 1, "no device list before the deadline: " + stream.describe())
            devices = [f for f in protobuf_fields(messages[0][1]) if f == (1, 2)]
            self.assertEqual(len(devices), 8, "the first ListAndWatch message lists %d devices" % len(devices))
            took = stream.closed_at - stream.opened_at
            self.assertGreaterEqual(took, 0.09, "ended %.3f s after the request, before its 100 ms" % took)
            self.assertLess(took, 5.0, "ended %.3f s after the request" % took)
            note("ListAndWatch with grpc-timeout 100m: %d message(s) (8 devices), then grpc-status %d %r after %.3f s" % (
                len(messages), stream.grpc_status(), stream.field(b"grpc-message"), took))
            # Without grpc-timeout the stream stays open past that.
            sid = client.request(grpc_headers(path=LIST_AND_WATCH_PATH), EMPTY_MESSAGE)
            client.wait(lambda: client.streams[sid].data, "the first ListAndWatch message")
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline and not client.eof:
                client.read_once(deadline)
            self.assertFalse(client.streams[sid].closed, "ListAndWatch without grpc-timeout ended: " +
                             client.streams[sid].describe())

    # 9 -------------------------------------------------------------------------
    def test_09_metrics_count_protocol_errors(self):
        port = metrics_port()
        before = grpc_error_count(port, "stream", "PROTOCOL_ERROR")
        with self.connect() as client:
            for what, headers in self.MALFORMED:
                self.send_malformed(client, headers, what)
        want = before + len(self.MALFORMED)
        seen = [before]

        def counted():
            seen[0] = grpc_error_count(port, "stream", "PROTOCOL_ERROR")
            return seen[0] >= want
        wait_for(counted, 'kgpu_grpc_errors_total{scope="stream",code="PROTOCOL_ERROR"} >= %d (is %d)' % (
            want, seen[0]), "plugin", timeout=READ_TIMEOUT)
        self.assertGreater(seen[0], 0)
        self.assertEqual(seen[0], want, "more resets counted than sent")
        note('kgpu_grpc_errors_total{scope="stream",code="PROTOCOL_ERROR"}: %d before, %d after %d resets' % (
            before, seen[0], len(self.MALFORMED)))


    # 10 ------------------------------------------------------------------------
    def test_10_daemon_survived_and_stops_on_sigterm(self):
        # Last: after every case above the daemon still serves and its kubelet registration holds,
        # and SIGTERM ends it promptly and cleanly (issue 27: a dead serving thread hung shutdown).
        with self.connect() as client:
            self.good_request(client, "a request after every case")
        log = CHILDREN.log("plugin")
        self.assertEqual(log.count("registered with the kubelet"), 1, "re-registered: the kubelet's stream broke")
        CHILDREN.stopped.add("plugin")
        code = CHILDREN.stop("plugin", timeout=20)
        self.assertIsNotNone(code, "kgpu plugin still running 20 s after SIGTERM")
        self.assertEqual(code, 0, "kgpu plugin exited with %s after SIGTERM" % code)
        note("kgpu plugin: still serving, registered once, exit code %d after SIGTERM" % code)


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], add_help=False)
    parser.add_argument("--kgpu", default=os.environ.get("KGPU_BINARY"))
    parser.add_argument("--fake-nvml", default=os.environ.get("KGPU_FAKE_NVML_DIR"))
    parser.add_argument("--fixtures", default=os.environ.get("KGPU_FIXTURES_DIR"))
    parser.add_argument("--keep-tmp", action="store_true", help="keep the temporary folder (logs)")
    args, rest = parser.parse_known_args()
    missing = [n for n in ("kgpu", "fake_nvml", "fixtures") if not getattr(args, n)]
    if missing:
        parser.print_usage(sys.stderr)
        print("missing: " + ", ".join("--" + n.replace("_", "-") for n in missing), file=sys.stderr)
        return 2
    # As tests/e2e/harness.cpp: CI's tsan phase points the e2e tests at another build of kgpu.
    args.kgpu = os.environ.get("KGPU_E2E_BINARY") or args.kgpu
    CONFIG.update(kgpu=os.path.abspath(args.kgpu), fake_nvml=os.path.abspath(args.fake_nvml),
                  fixtures=os.path.abspath(args.fixtures))
    CHILDREN.keep_tmp = args.keep_tmp
    atexit.register(CHILDREN.cleanup)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)

    started = time.monotonic()
    program = unittest.main(module=__name__, argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    ok = program.result.wasSuccessful() and program.result.testsRun > 0
    if not ok and CHILDREN.tmp:
        for name in ("plugin", "kubelet-sim"):
            print("---- %s stderr (last 60 lines) ----\n%s" % (
                name, "\n".join(CHILDREN.log(name).splitlines()[-60:])), file=sys.stderr)
    if CHILDREN.keep_tmp and CHILDREN.tmp:
        print("raw_h2_test: logs kept in " + CHILDREN.tmp, file=sys.stderr)
    CHILDREN.cleanup()
    print("raw_h2_test: %s in %.1f s" % ("passed" if ok else "FAILED", time.monotonic() - started), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
