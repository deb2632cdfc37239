// SPDX-License-Identifier: MIT
// CORE bundle parts (eval/core/bundle.h) and what is made of their items (eval/core/render.h):
// core.yaml, eval_meta_data.csv, and each type's JSONL, whose items are then rendered with each
// other as shots and turned into scored spans on the byte tokenizer at a small context.
// Input: one mode byte (0 yaml, 1 csv, 2-4 JSONL of multiple choice, schema, language
// modeling; bits 3..7: the context length), then the file.
#include "eval/core/bundle.h"
#include "eval/core/render.h"
#include "fuzz_util.h"
#include "tokenizer/byte_tokenizer.h"

namespace {

void render_items(nt::CoreTaskType type, const std::vector<nt::CoreItem>& items, int max_len) {
  const nt::ByteTokenizer tok;
  const auto chosen = nt::select_items(items, 8);
  const int64_t n = int64_t(chosen.size());
  for (int64_t idx = 0; idx < n; ++idx) {
    std::vector<const nt::CoreItem*> shots;
    for (int64_t p : nt::select_shots(idx, n, int(std::min<int64_t>(2, n - 1)))) shots.push_back(&chosen[size_t(p)]);
    const auto prompts = nt::render_prompts(type, " ", chosen[size_t(idx)], shots);
    nt::fuzz::expect_ok_or_error([&] {
      const nt::CoreQuestion q = nt::build_question(type, prompts, tok, max_len);
      for (const auto& c : q.candidates) {
        NT_FUZZ_ASSERT(!c.tokens.empty() && int(c.tokens.size()) <= max_len);
        NT_FUZZ_ASSERT(c.begin >= 1 && c.begin <= c.end && c.end <= int(c.tokens.size()));
      }
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] & 7, max_len = 1 + (data[0] >> 3) * 8;
  const std::string text = nt::fuzz::as_string(data + 1, size - 1);
  nt::fuzz::expect_ok_or_error([&] {
    if (mode == 0) {
      for (const auto& s : nt::parse_core_yaml(text, "core.yaml")) NT_FUZZ_ASSERT(s.shots >= 0 && !s.label.empty());
    } else if (mode == 1) {
      for (const auto& [label, b] : nt::parse_baselines_csv(text, "eval_meta_data.csv")) NT_FUZZ_ASSERT(b >= 0 && b < 100);
    } else if (mode <= 4) {
      const auto type = nt::CoreTaskType(mode - 2);
      nt::BundleOptions opt;
      opt.skip_bad = true;
      const auto items = nt::parse_task_items(text, "task.jsonl", type, opt);
      for (const auto& it : items)
        if (type != nt::CoreTaskType::kLanguageModeling)
          NT_FUZZ_ASSERT(!it.choices.empty() && it.gold >= 0 && size_t(it.gold) < it.choices.size());
      render_items(type, items, max_len);
    }
  });
  return 0;
}
