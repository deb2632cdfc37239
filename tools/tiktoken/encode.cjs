#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// Reference token ids from the real tiktoken (npm tiktoken@1.0.22, WebAssembly).
//
// usage: node encode.cjs CASES.json OUT.json
//   CASES.json: {"encoding": "cl100k_base"} or {"tiktoken": "FILE.tiktoken"} (sidecar FILE.tiktoken.json
//               gives the pattern and special tokens), plus "cases": ["<base64 bytes>", ...]
//   OUT.json:   [[id, ...], ...], one array per case.
// Bytes that are not valid UTF-8 follow nanotrain's documented rule (src/tokenizer/pretokenizer.h):
// maximal valid runs are encoded on their own; every invalid byte is its single-byte token.
"use strict";
const fs = require("fs");
const { get_encoding, Tiktoken } = require("tiktoken");

function validPrefix(b, i) {
  const n = b.length;
  let j = i;
  while (j < n) {
    const c = b[j];
    if (c < 0x80) { j++; continue; }
    let len, cp;
    if ((c & 0xe0) === 0xc0) { len = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) === 0xe0) { len = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) === 0xf0) { len = 4; cp = c & 0x07; }
    else return j;
    if (j + len > n) return j;
    for (let k = 1; k < len; k++) {
      if ((b[j + k] & 0xc0) !== 0x80) return j;
      cp = (cp << 6) | (b[j + k] & 0x3f);
    }
    const overlong = (len === 2 && cp < 0x80) || (len === 3 && cp < 0x800) || (len === 4 && cp < 0x10000);
    if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return j;
    j += len;
  }
  return n;
}

function main() {
  const [casesPath, outPath] = process.argv.slice(2);
  if (!casesPath || !outPath) { console.error("usage: node encode.cjs CASES.json OUT.json"); process.exit(2); }
  const spec = JSON.parse(fs.readFileSync(casesPath, "utf8"));
  let enc;
  if (spec.encoding) {
    enc = get_encoding(spec.encoding);
  } else {
    const side = JSON.parse(fs.readFileSync(spec.tiktoken + ".json", "utf8"));
    enc = new Tiktoken(fs.readFileSync(spec.tiktoken, "utf8"), side.special_tokens, side.pattern);
  }
  const dec = new TextDecoder("utf-8", { fatal: true });
  const out = [];
  for (const c of spec.cases) {
    const b = Buffer.from(c, "base64");
    const ids = [];
    let i = 0;
    while (i < b.length) {
      const j = validPrefix(b, i);
      if (j === i) { ids.push(enc.encode_single_token(b.subarray(i, i + 1))); i++; continue; }
      for (const id of enc.encode_ordinary(dec.decode(b.subarray(i, j)))) ids.push(id);
      i = j;
    }
    out.push(ids);
  }
  enc.free();
  fs.writeFileSync(outPath, JSON.stringify(out));
}

main();
