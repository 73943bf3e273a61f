#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (fuzz/corpus): byte streams a client could send, each a
sequence of length-prefixed hearth.rpc.v1.Frame messages, encoded here by hand."""
import os
import struct

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

def field(number, wire, value):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(value)
    return key + varint(len(value)) + value

def frame(call_id=0, kind=1, method="", metadata=None, timeout_ms=0, payload=b""):
    body = b""
    if call_id: body += field(1, 0, call_id)
    if kind: body += field(2, 0, kind)
    if method: body += field(3, 2, method.encode())
    for k, v in (metadata or {}).items():
        body += field(4, 2, field(1, 2, k.encode()) + field(2, 2, v.encode()))
    if timeout_ms: body += field(5, 0, timeout_ms)
    if payload: body += field(6, 2, payload)
    return struct.pack(">I", len(body)) + body

secret = {"x-hearth-internal": "fuzz-secret"}
user = {"x-hearth-internal": "fuzz-secret", "x-hearth-user": "ana"}
echo = "hearth.echo.v1.Echo/Echo"
seeds = {
    "echo": frame(1, 1, echo, secret, 1000, b"\x0a\x02hi"),
    "echo-no-credential": frame(1, 1, echo, {}, 0, b"\x0a\x02hi"),
    "health": frame(7, 1, "hearth.health.v1.Health/Check"),
    "unknown-method": frame(2, 1, "hearth.nowhere.v1.X/Y", secret),
    "fail": frame(3, 1, "hearth.fuzz.v1.Fuzz/Fail", secret),
    # A caller whose credential allows Echo only: PERMISSION_DENIED for anything else.
    "echo-only-denied": frame(3, 1, "hearth.fuzz.v1.Fuzz/Fail", {"x-hearth-internal": "fuzz-echo-only"}),
    "echo-only-echo": frame(1, 1, echo, {"x-hearth-internal": "fuzz-echo-only"}, 0, b"\x0a\x02hi"),
    "user": frame(4, 1, "hearth.fuzz.v1.Fuzz/User", user),
    "pipelined": b"".join(frame(n, 1, echo, secret, 0, bytes([n])) for n in range(1, 6)),
    "cancel": frame(9, 1, echo, secret) + frame(9, 3),
    "ping": frame(0, 4),
    "goaway": frame(0, 6),
    "unspecified-kind": frame(5, 0, echo, secret),
    "response-from-client": frame(5, 2),
    "duplicate-call-id": frame(8, 1, echo, secret) + frame(8, 1, echo, secret),
    "zero-deadline": frame(6, 1, echo, secret, 1),
    "half-frame": frame(1, 1, echo, secret)[:7],
    "oversized-length": struct.pack(">I", 0xFFFFFFF0) + b"\x08\x01",
    "empty-frame": struct.pack(">I", 0),
    "garbage": bytes(range(256)),
    "forward-now": frame(10, 1, "hearth.fwd.v1.F/Now", secret, 0, b"\x00"),
    "forward-error": frame(11, 1, "hearth.fwd.v1.F/Error", secret, 0, b"\x01"),
    "forward-later": frame(12, 1, "hearth.fwd.v1.F/Later", secret, 0, b"\x02"),
    "forward-never": frame(13, 1, "hearth.fwd.v1.F/Never", secret, 5, b"\x03"),
    "forward-cancelled": frame(14, 1, "hearth.fwd.v1.F/Never", secret, 0, b"\x03") + frame(14, 3),
    "forward-pipelined": b"".join(frame(n, 1, "hearth.fwd.v1.F/X", secret, 0, bytes([n])) for n in range(20, 28)),
}
folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(folder, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {folder}")
