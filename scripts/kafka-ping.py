#!/usr/bin/env python3
"""Check that a Kafka broker answers real protocol requests.

Sends ApiVersions v0 and Metadata v4 (all topics, no auto-creation) over
plain TCP and succeeds when both responses parse and the metadata lists at
least one broker. Standard library only; used by scripts/kafka for readiness.

With --brokers N it succeeds only once the metadata lists at least N brokers
(a cluster node is listed once it is registered and unfenced); with
--node-id I only once node I is among them.

Usage: kafka-ping.py [--host H] [--port P] [--timeout SECONDS] [--brokers N] [--node-id I] [--quiet]
Exit status: 0 ready, 1 not ready (message on stderr unless --quiet).
"""

import argparse
import socket
import struct
import sys

API_METADATA = 3
API_VERSIONS = 18
CLIENT_ID = b"kwire-ping"


class ProtocolError(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ProtocolError("response truncated")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        return self.take(n).decode("utf-8", "replace")


def encode_request(api_key, api_version, correlation_id, body):
    # Request header v1: api_key, api_version, correlation_id, client_id.
    header = struct.pack(">hhih", api_key, api_version, correlation_id,
                         len(CLIENT_ID)) + CLIENT_ID
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProtocolError("connection closed by broker")
        buf.extend(chunk)
    return bytes(buf)


def round_trip(sock, api_key, api_version, correlation_id, body):
    sock.sendall(encode_request(api_key, api_version, correlation_id, body))
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    if size < 4 or size > 64 * 1024 * 1024:
        raise ProtocolError("bad response size %d" % size)
    r = Reader(recv_exact(sock, size))
    got = r.i32()  # response header v0: correlation_id
    if got != correlation_id:
        raise ProtocolError("correlation id %d, expected %d" % (got, correlation_id))
    return r


def api_versions(sock):
    r = round_trip(sock, API_VERSIONS, 0, 1, b"")
    error = r.i16()
    if error != 0:
        raise ProtocolError("ApiVersions error code %d" % error)
    count = r.i32()
    apis = {}
    for _ in range(max(count, 0)):
        key, lo, hi = r.i16(), r.i16(), r.i16()
        apis[key] = (lo, hi)
    return apis


def metadata(sock):
    # Metadata v4 body: topics = null (all topics), allow_auto_topic_creation = false.
    body = struct.pack(">ib", -1, 0)
    r = round_trip(sock, API_METADATA, 4, 2, body)
    r.i32()  # throttle_time_ms
    brokers = []
    for _ in range(max(r.i32(), 0)):
        node_id = r.i32()
        host = r.string()
        port = r.i32()
        r.string()  # rack
        brokers.append((node_id, host, port))
    cluster_id = r.string()
    controller_id = r.i32()
    topics = []
    for _ in range(max(r.i32(), 0)):
        error = r.i16()
        name = r.string()
        r.i8()  # is_internal
        partitions = r.i32()
        for _ in range(max(partitions, 0)):
            r.i16()  # error_code
            r.i32()  # partition_index
            r.i32()  # leader_id
            for _ in range(2):  # replica_nodes, isr_nodes
                n = r.i32()
                r.take(4 * max(n, 0))
        topics.append((name, error, partitions))
    return brokers, cluster_id, controller_id, topics


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=19092)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--node-id", type=int, default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    try:
        with socket.create_connection((args.host, args.port), timeout=args.timeout) as sock:
            apis = api_versions(sock)
            if API_METADATA not in apis:
                raise ProtocolError("broker does not list the Metadata API")
            lo, hi = apis[API_METADATA]
            if not lo <= 4 <= hi:
                raise ProtocolError("broker Metadata versions %d..%d exclude v4" % (lo, hi))
            brokers, cluster_id, controller_id, topics = metadata(sock)
    except (OSError, ProtocolError) as e:
        if not args.quiet:
            print("kafka-ping: %s:%d: %s" % (args.host, args.port, e), file=sys.stderr)
        return 1

    if len(brokers) < max(args.brokers, 1):
        if not args.quiet:
            print("kafka-ping: %s:%d: metadata lists %d broker(s), want %d"
                  % (args.host, args.port, len(brokers), max(args.brokers, 1)),
                  file=sys.stderr)
        return 1
    if args.node_id is not None and args.node_id not in [b[0] for b in brokers]:
        if not args.quiet:
            print("kafka-ping: %s:%d: metadata does not list node %d yet"
                  % (args.host, args.port, args.node_id), file=sys.stderr)
        return 1
    if not args.quiet:
        print("cluster %s: %d broker(s) %s, controller %d, %d topic(s), %d APIs"
              % (cluster_id, len(brokers),
                 ",".join("%d@%s:%d" % b for b in brokers),
                 controller_id, len(topics), len(apis)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
