#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An independent reader of TensorBoard event files (TFRecord framing around protobuf Event
messages), written from the format's description with plain struct and varint parsing, and a
check of a run folder's RUN/tensorboard/ against the run's metrics.jsonl: every record's CRCs,
each file's version record, and one event per metrics line with the line's step and its numbers
as float32 scalars under "<type>/<key>" tags ("train/..." for step lines).

usage: check_events.py RUN_DIR   (exit 0 and a summary line when everything matches)
"""
import json
import os
import struct
import sys
import time


def crc32c(data: bytes) -> int:
    """Bit by bit, from the definition: reflected Castagnoli polynomial, inverted in and out."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = open(path, "rb").read()
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError(f"{path}: {len(data) - pos} stray bytes at the end")
        header = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if hcrc != masked(crc32c(header)):
            raise ValueError(f"{path}: bad length CRC at offset {pos}")
        body = data[pos + 12:pos + 12 + n]
        if len(body) != n or len(data) < pos + 16 + n:
            raise ValueError(f"{path}: record at offset {pos} cut short")
        (dcrc,) = struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])
        if dcrc != masked(crc32c(body)):
            raise ValueError(f"{path}: bad data CRC at offset {pos}")
        yield body
        pos += 16 + n


def varint(buf, pos):
    v, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def fields(buf):
    """(field number, wire type, value) of a protobuf message: ints, bytes or raw fixed bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = varint(buf, pos)
        elif wire == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, v


def event(buf):
    e = {"wall_time": None, "step": 0, "file_version": None, "values": []}
    for field, wire, v in fields(buf):
        if field == 1 and wire == 1:
            e["wall_time"] = struct.unpack("<d", v)[0]
        elif field == 2 and wire == 0:
            e["step"] = v
        elif field == 3 and wire == 2:
            e["file_version"] = v.decode()
        elif field == 5 and wire == 2:
            for f2, w2, value in fields(v):
                assert f2 == 1 and w2 == 2, "Summary holds only Value messages"
                tag, simple = None, None
                for f3, w3, x in fields(value):
                    if f3 == 1 and w3 == 2:
                        tag = x.decode()
                    elif f3 == 2 and w3 == 5:
                        simple = struct.unpack("<f", x)[0]
                e["values"].append((tag, simple))
    return e


def expected_scalars(line):
    kind = "train" if line["type"] == "step" else line["type"]
    out = {}

    def walk(obj, prefix):
        for k, v in obj.items():
            if k in ("step", "type"):
                continue
            if isinstance(v, dict):
                walk(v, prefix + k + "/")
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[prefix + k] = struct.unpack("<f", struct.pack("<f", float(v)))[0]

    walk(line, kind + "/")
    return out


def main(run_dir):
    assert crc32c(b"123456789") == 0xE3069283, "crc32c disagrees with the standard check value"
    tb = os.path.join(run_dir, "tensorboard")
    names = sorted(n for n in os.listdir(tb) if "tfevents" in n)
    assert names, f"{tb}: no event files"
    # Files in metrics order: each name ends in the metrics line its first event stands for.
    names.sort(key=lambda n: int(n.rsplit(".", 1)[1]))
    events = []
    for name in names:
        evs = [event(r) for r in records(os.path.join(tb, name))]
        assert evs and evs[0]["file_version"] == "brain.Event:2", f"{name}: no version record first"
        assert int(name.rsplit(".", 1)[1]) == len(events), f"{name}: starts at line {len(events)}"
        events += [e for e in evs[1:]]
    lines = [json.loads(x) for x in open(os.path.join(run_dir, "metrics.jsonl"))]
    assert len(events) == len(lines), f"{len(events)} events for {len(lines)} metrics lines"
    # A run rolled back by --on-nan repeats steps in metrics.jsonl too; otherwise none may repeat.
    keys = [(x["type"], x["step"]) for x in lines]
    rolled_back = len(set(keys)) != len(keys)
    now, seen, last = time.time(), set(), 0.0
    for i, (e, line) in enumerate(zip(events, lines)):
        assert e["file_version"] is None
        assert e["step"] == line["step"], f"event {i}: step {e['step']}, line says {line['step']}"
        assert rolled_back or (line["type"], e["step"]) not in seen, f"{line['type']} step {e['step']} twice"
        seen.add((line["type"], e["step"]))
        assert now - 86400 < e["wall_time"] <= now + 1 and e["wall_time"] >= last - 1e-3, f"event {i}: wall time"
        last = e["wall_time"]
        got = dict(e["values"])
        assert len(got) == len(e["values"]), f"event {i}: a tag twice"
        want = expected_scalars(line)
        assert got == want, f"event {i}: {got} != {want}"
    tags = sorted({t for e in events for t, _ in e["values"]})
    print(f"{len(names)} file(s), {len(events)} events match metrics.jsonl; tags: {' '.join(tags)}")


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except (AssertionError, ValueError, OSError) as err:
        print(f"check_events: {err}", file=sys.stderr)
        sys.exit(1)
