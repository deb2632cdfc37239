// SPDX-License-Identifier: MIT
// CORE's items, shots and prompts exactly as the reference harness makes them: the items
// shuffled with Random(1337) and cut, each item's shots drawn with Random(1234 + idx).sample over
// the other positions, few-shot prompts rendered per task type, tokenized with BOS first, the
// scored spans found (common token prefix, common token suffix, or the prompt without the
// continuation) and sequences longer than the model's context cut from the left.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "eval/core/bundle.h"
#include "eval/core/scorer.h"
#include "tokenizer/tokenizer.h"

namespace nt {

// random.Random(1337).shuffle(items), then the first max_items (0: all).
std::vector<CoreItem> select_items(const std::vector<CoreItem>& items, int64_t max_items);

// The positions of item idx's shots among n items: Random(1234 + idx).sample of the other
// positions, k of them in the order drawn. k must be at most n - 1 (core_eval lowers it).
std::vector<int64_t> select_shots(int64_t idx, int64_t n, int k);

// Python's str.strip(): removes leading and trailing Unicode whitespace (str.isspace).
std::string_view py_strip(std::string_view s);

// The prompts of one item: one per choice (multiple choice), one per context option (schema),
// or [without continuation (stripped), with continuation] (language modeling).
std::vector<std::string> render_prompts(CoreTaskType type, const std::string& delimiter, const CoreItem& item,
                                        const std::vector<const CoreItem*>& shots);

// Tokenizes the prompts (BOS first), finds the spans and cuts each sequence to its last
// max_len tokens. Throws nt::Error with the reason (no file or line) where the reference stops:
// a language-modeling prompt whose tokens without the continuation are not a proper prefix of
// those with it, or a span that starts before the kept tokens. A multiple-choice or schema span
// that is empty or starts at the first kept token scores nothing (begin == end).
CoreQuestion build_question(CoreTaskType type, const std::vector<std::string>& prompts, const Tokenizer& tok,
                            int max_len);

}  // namespace nt
