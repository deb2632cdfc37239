#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// tiktoken-WASM encoding throughput, single thread, the peer for `nanotrain tokenizer encode --bench`.
// usage: node bench.cjs ENCODING FILE.jsonl [MAX_MB] [REPEAT]
// Encodes the "text" of the first records up to MAX_MB (UTF-8 bytes) with encode_ordinary, one
// record at a time, REPEAT times; prints the median MB/s (1 MB = 10^6 bytes).
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");

const [encoding, file, maxMbArg, repeatArg] = process.argv.slice(2);
if (!encoding || !file) { console.error("usage: node bench.cjs ENCODING FILE.jsonl [MAX_MB] [REPEAT]"); process.exit(2); }
const maxBytes = (maxMbArg ? Number(maxMbArg) : 0) * 1e6;
const repeat = repeatArg ? Number(repeatArg) : 3;
const texts = [];
let bytes = 0;
for (const line of fs.readFileSync(file, "utf8").split("\n")) {
  if (!line.trim()) continue;
  if (maxBytes > 0 && bytes >= maxBytes) break;
  const t = JSON.parse(line).text;
  texts.push(t);
  bytes += Buffer.byteLength(t, "utf8");
}
const enc = get_encoding(encoding);
const secs = [];
let tokens = 0;
for (let r = 0; r < repeat; r++) {
  tokens = 0;
  const t0 = process.hrtime.bigint();
  for (const t of texts) tokens += enc.encode_ordinary(t).length;
  secs.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
secs.sort((a, b) => a - b);
const med = secs[Math.floor(secs.length / 2)];
console.log(`tiktoken-wasm ${encoding}: ${texts.length} texts, ${(bytes / 1e6).toFixed(2)} MB, ${tokens} tokens, 1 thread: ` +
            `${(bytes / 1e6 / med).toFixed(2)} MB/s (median of ${secs.length}, ${med.toFixed(3)} s)`);
enc.free();
