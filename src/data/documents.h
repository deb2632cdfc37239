// SPDX-License-Identifier: MIT
// Reading user text into documents: plain text files (one document per file, long files cut at
// paragraph ends), folders of them (recursively, sorted), and JSONL (one document per record,
// field configurable). Text must be valid UTF-8; errors name the file (and line).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nt {

struct DocumentOptions {
  std::string jsonl_field = "text";
  // Plain-text files longer than this are cut at paragraph (or line) ends into pieces of at least
  // this many bytes, so that a single book still gives a validation split.
  size_t cut_bytes = 16384;
};

// Appends the documents of every input (file or folder) in a deterministic order.
void read_documents(const std::vector<std::string>& inputs, const DocumentOptions& opt,
                    std::vector<std::string>& docs);

// The documents of one file's contents: JSONL when `path` ends in .jsonl, else plain text (cut
// as above). `path` names the source in messages; nothing is read from disk.
void parse_documents(const std::string& text, const std::string& path, const DocumentOptions& opt,
                     std::vector<std::string>& docs);

// True if s is valid UTF-8 (no overlongs, no surrogates, max U+10FFFF). On failure sets
// *bad_offset to the first invalid byte.
bool is_valid_utf8(const std::string& s, size_t* bad_offset = nullptr);

// Deterministic held-out split: a document goes to validation when the first 8 bytes of
// sha256(document) read as a fraction are below val_frac. Guarantees a non-empty split on each
// side when there are at least 2 documents.
void split_documents(std::vector<std::string>& docs, double val_frac,
                     std::vector<std::string>& val);

}  // namespace nt
