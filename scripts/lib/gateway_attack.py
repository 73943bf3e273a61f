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


def fields(data):
    """The top-level fields of a protobuf message: {number: [value, ...]}."""
    found, i = collections.defaultdict(list), 0
    try:
        while i < len(data):
            key, shift = 0, 0
            while True:
                key |= (data[i] & 0x7F) << shift
                shift += 7
                i += 1
                if not data[i - 1] & 0x80:
                    break
            number, kind = key >> 3, key & 7
            if kind == 0:
                value, shift = 0, 0
                while True:
                    value |= (data[i] & 0x7F) << shift
                    shift += 7
                    i += 1
                    if not data[i - 1] & 0x80:
                        break
            elif kind == 2:
                length, shift = 0, 0
                while True:
                    length |= (data[i] & 0x7F) << shift
                    shift += 7
                    i += 1
                    if not data[i - 1] & 0x80:
                        break
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


async def holder(kind, source, opening=b"", every=None):
    """Holds a connection open (sending `every` each second, if given) until the server closes
    it, then opens another, until the end."""
    while time.monotonic() < END:
        opened = await connect(kind, source)
        if opened is None:
            continue
        reader, writer = opened
        stats[kind]["opened"] += 1
        if opening:
            writer.write(opening)

        async def keep_alive():
            while every is not None and time.monotonic() < END:
                await asyncio.sleep(1)
                writer.write(every)

        pinging = asyncio.ensure_future(keep_alive())
        how = await ending(reader)
        pinging.cancel()
        if how is not None:
            stats[kind]["closed: " + how] += 1
        writer.close()
        await asyncio.sleep(1)


async def staller(source):
    """Authenticates with a call, then sends all but the last byte of an 11 MB frame."""
    while time.monotonic() < END:
        opened = await connect("stalled", source)
        if opened is None:
            continue
        reader, writer = opened
        stats["stalled"]["opened"] += 1
        writer.write(ECHO)
        try:
            await writer.drain()
            await asyncio.wait_for(reader.read(1 << 16), timeout=5)
            size = 11_000_000
            writer.write(struct.pack(">I", size) + bytes(size - 1))
            await writer.drain()
            stats["stalled"]["frames held"] += 1
        except (asyncio.TimeoutError, OSError):
            pass
        how = await ending(reader)
        if how is not None:
            stats["stalled"]["closed: " + how] += 1
        writer.close()
        await asyncio.sleep(1)


async def garbage(source):
    while time.monotonic() < END:
        opened = await connect("garbage", source)
        if opened is None:
            continue
        reader, writer = opened
        stats["garbage"]["opened"] += 1
        # Random bytes, or the prefix of a photo-sized frame from a caller not yet known.
        writer.write(os.urandom(4096) if stats["garbage"]["opened"] % 2 else struct.pack(">I", 11_000_000))
        how = await ending(reader)
        if how is not None:
            stats["garbage"]["closed: " + how] += 1
        writer.close()
        await asyncio.sleep(0.1)


async def main():
    # GATEWAY_ATTACKS=cap,ping (say) runs only those: to see what each costs.
    chosen = set(os.environ.get("GATEWAY_ATTACKS", "cap,wide,ping,stalled,garbage").split(","))
    tasks = [holder("cap", "127.0.0.2") for _ in range(400 if "cap" in chosen else 0)]
    for index in range(ADDRESSES if "wide" in chosen else 0):
        source = "127.0.%d.%d" % (1 + index // 200, 3 + index % 200)
        tasks += [holder("wide", source) for _ in range(250)]
    tasks += [holder("ping", "127.0.0.250", every=PING) for _ in range(100 if "ping" in chosen else 0)]
    tasks += [staller("127.0.0.251") for _ in range(20 if "stalled" in chosen else 0)]
    tasks += [garbage("127.0.0.252") for _ in range(4 if "garbage" in chosen else 0)]
    await asyncio.gather(*tasks)


asyncio.run(main())
times = os.times()
report = {kind: dict(counter) for kind, counter in sorted(stats.items())}
report["attacker_cpu_s"] = round(times.user + times.system, 2)
print(json.dumps(report))
