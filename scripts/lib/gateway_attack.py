"""Hostile traffic at a Hearth gateway's edge limits, for scripts/abuse-gateway.

    python3 gateway_attack.py PORT SECONDS TOKEN [ADDRESSES]

Attacks for SECONDS, each from loopback addresses of its own (never 127.0.0.1, where the
well-behaved client is), reopening what the server closes:
- cap: 400 connections from 127.0.0.2, past the per-address cap (256);
- wide: 250 connections from each of ADDRESSES further addresses (default 40: 10,000 in all,
  the global cap), none of which ever authenticates;
- ping: 100 connections that send a PING every second and never authenticate;
- stalled: 20 connections of a user with a valid TOKEN, each authenticated by a call, then
  sending a frame of 11,000,000 bytes all but its last byte, and stalling;
- garbage: random bytes, and frame prefixes of unauthenticated 11 MB frames.
Each connection is opened again one second after the server closed it (a tenth of a second for
garbage): the attack's pace is the attacker's, the same whichever server it hits, so that a
control run against another server carries the same traffic. Prints one JSON object: per
attack, connections opened, refused at connect, and closed by the server (by the GOAWAY code
it sent, "eof" without one, "reset" when the connection was reset).
"""

import asyncio
import collections
import json
import os
import struct
import sys
import time

PORT, SECONDS, TOKEN = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ADDRESSES = int(sys.argv[4]) if len(sys.argv) > 4 else 40
END = time.monotonic() + SECONDS
CODES = {1: "CANCELLED", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 8: "RESOURCE_EXHAUSTED",
         14: "UNAVAILABLE", 16: "UNAUTHENTICATED"}
stats = collections.defaultdict(collections.Counter)


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def framed(body):
    return struct.pack(">I", len(body)) + body


def request(call_id, method, metadata, payload):
    body = field(1, call_id) + field(2, 1) + field(3, method.encode())
    for key, value in metadata.items():
        body += field(4, field(1, key.encode()) + field(2, value.encode()))
    return framed(body + field(6, payload))


PING = framed(field(1, 7) + field(2, 4))
ECHO = request(1, "hearth.echo.v1.Echo/Echo", {"authorization": "Bearer " + TOKEN}, field(1, b"hi"))


def read_varint(data, i):
    """The varint at `i` and the index after it (IndexError when it is cut short)."""
    value, shift = 0, 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        shift += 7
        i += 1
        if not byte & 0x80:
            return value, i


def fields(data):
    """The top-level fields of a protobuf message: {number: [value, ...]}."""
    found, i = collections.defaultdict(list), 0
    try:
        while i < len(data):
            key, i = read_varint(data, i)
            number, kind = key >> 3, key & 7
            if kind == 0:
                value, i = read_varint(data, i)
            elif kind == 2:
                length, i = read_varint(data, i)
                value, i = data[i:i + length], i + length
            else:
                return found
            found[number].append(value)
    except IndexError:
        pass
    return found


async def ending(reader):
    """Reads frames until the server closes: the code of its GOAWAY, else "eof"."""
    code = "eof"
    buffer = b""
    while time.monotonic() < END:
        try:
            data = await asyncio.wait_for(reader.read(1 << 16), timeout=max(0.05, END - time.monotonic()))
        except (asyncio.TimeoutError, OSError):
            return None if time.monotonic() >= END else "reset"
        if not data:
            return code
        buffer += data
        while len(buffer) >= 4:
            length = struct.unpack(">I", buffer[:4])[0]
            if len(buffer) < 4 + length:
                break
            frame, buffer = fields(buffer[4:4 + length]), buffer[4 + length:]
            if frame.get(2) == [6]:
                status = fields(frame.get(7, [b""])[0])
                code = CODES.get(status.get(1, [0])[0], str(status.get(1, [0])[0]))
    return None


async def connect(kind, source):
    try:
        return await asyncio.open_connection("127.0.0.1", PORT, local_addr=(source, 0))
    except OSError:
        stats[kind]["refused at connect"] += 1
        await asyncio.sleep(1)
        return None


async def attacker(kind, source, behave, pause):
    """Opens a connection from `source`, has `behave(reader, writer)` use it, waits until the
    server closes it, then `pause` seconds later opens another, until the end."""
    while time.monotonic() < END:
        opened = await connect(kind, source)
        if opened is None:
            continue
        reader, writer = opened
        stats[kind]["opened"] += 1
        alongside = asyncio.ensure_future(behave(reader, writer))
        how = await ending(reader)
        alongside.cancel()
        if how is not None:
            stats[kind]["closed: " + how] += 1
        writer.close()
        await asyncio.sleep(pause)


async def idle(reader, writer):
    """Sends nothing: a slot held."""


async def pinging(reader, writer):
    """A PING every second, never a call."""
    while time.monotonic() < END:
        await asyncio.sleep(1)
        writer.write(PING)


async def stalling(reader, writer):
    """Authenticates with a call, then sends all but the last byte of an 11 MB frame. The call's
    answer is read by `ending`, which sees it before anything else."""
    writer.write(ECHO)
    try:
        await writer.drain()
        await asyncio.sleep(0.5)
        size = 11_000_000
        writer.write(struct.pack(">I", size) + bytes(size - 1))
        await writer.drain()
        stats["stalled"]["frames held"] += 1
    except OSError:
        pass


async def garbling(reader, writer):
    """Random bytes, or the prefix of a photo-sized frame from a caller not yet known."""
    writer.write(os.urandom(4096) if stats["garbage"]["opened"] % 2 else struct.pack(">I", 11_000_000))


async def main():
    # GATEWAY_ATTACKS=cap,ping (say) runs only those: to see what each costs.
    chosen = set(os.environ.get("GATEWAY_ATTACKS", "cap,wide,ping,stalled,garbage").split(","))
    # The few first, so that each attack holds its connections before the 10,000 fill the cap.
    tasks = [attacker("stalled", "127.0.0.251", stalling, 1) for _ in range(20 if "stalled" in chosen else 0)]
    tasks += [attacker("ping", "127.0.0.250", pinging, 1) for _ in range(100 if "ping" in chosen else 0)]
    tasks += [attacker("garbage", "127.0.0.252", garbling, 0.1) for _ in range(4 if "garbage" in chosen else 0)]
    tasks += [attacker("cap", "127.0.0.2", idle, 1) for _ in range(400 if "cap" in chosen else 0)]
    for index in range(ADDRESSES if "wide" in chosen else 0):
        source = "127.0.%d.%d" % (1 + index // 200, 3 + index % 200)
        tasks += [attacker("wide", source, idle, 1) for _ in range(250)]
    await asyncio.gather(*tasks)


asyncio.run(main())
times = os.times()
report = {kind: dict(counter) for kind, counter in sorted(stats.items())}
report["attacker_cpu_s"] = round(times.user + times.system, 2)
print(json.dumps(report))
