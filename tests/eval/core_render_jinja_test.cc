// SPDX-License-Identifier: MIT
// render_prompts against the reference's own Jinja2 templates (tools/core_ref/core_ref.py's
// render, run by /usr/bin/python3) on many items of awkward text: leading and trailing spaces,
// newlines, tabs, Unicode spaces, empty fields, odd delimiters. Byte for byte.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "eval/core/render.h"

namespace nt {
namespace {

std::string random_text(Rng& r) {
  static const char* pieces[] = {" ", "  ", "\n", "\n\n", "\t", "\xC2\xA0", "\xE3\x80\x80", "a", "word", "\xC3\xA9",
                                 ".", "?", "\r\n", "x y", "\xE2\x80\x8B", ""};
  std::string s;
  const int n = int(r.below(6));
  for (int i = 0; i < n; ++i) s += pieces[r.below(sizeof(pieces) / sizeof(pieces[0]))];
  return s;
}

CoreItem random_item(CoreTaskType type, Rng& r) {
  CoreItem it;
  const int choices = 1 + int(r.below(3));
  if (type != CoreTaskType::kSchema) it.query = random_text(r);
  if (type != CoreTaskType::kMultipleChoice) it.continuation = random_text(r);
  if (type != CoreTaskType::kLanguageModeling)
    for (int c = 0; c < choices; ++c) it.choices.push_back(random_text(r));
  it.gold = type == CoreTaskType::kLanguageModeling ? 0 : int(r.below(uint64_t(choices)));
  return it;
}

nlohmann::json item_json(CoreTaskType type, const CoreItem& it) {
  switch (type) {
    case CoreTaskType::kMultipleChoice:
      return {{"query", it.query}, {"choices", it.choices}, {"gold", it.gold}};
    case CoreTaskType::kSchema:
      return {{"context_options", it.choices}, {"continuation", it.continuation}, {"gold", it.gold}};
    case CoreTaskType::kLanguageModeling:
      return {{"context", it.query}, {"continuation", it.continuation}};
  }
  return {};
}

TEST(CoreRenderJinja, MatchesTheReferenceTemplates) {
  if (std::system("/usr/bin/python3 -c 'import jinja2, torch, yaml' 2>/dev/null") != 0)
    GTEST_SKIP() << "/usr/bin/python3 lacks jinja2, torch or yaml";
  Rng r(5);
  const char* delims[] = {" ", "", "\n", "\nAnswer: ", " \t"};
  struct Case {
    CoreTaskType type;
    std::string delim;
    CoreItem item;
    std::vector<CoreItem> shots;
  };
  std::vector<Case> cases;
  nlohmann::json in = nlohmann::json::array();
  for (int i = 0; i < 600; ++i) {
    Case c{CoreTaskType(i % 3), delims[r.below(5)], {}, {}};
    c.item = random_item(c.type, r);
    for (uint64_t s = r.below(4); s > 0; --s) c.shots.push_back(random_item(c.type, r));
    nlohmann::json shots = nlohmann::json::array();
    for (const auto& s : c.shots) shots.push_back(item_json(c.type, s));
    in.push_back({{"type", core_task_type_name(c.type)}, {"delim", c.delim}, {"item", item_json(c.type, c.item)},
                  {"shots", shots}});
    cases.push_back(std::move(c));
  }
  const auto dir = std::filesystem::temp_directory_path();
  const std::string in_path = (dir / ("nt_jinja_in_" + std::to_string(::getpid()) + ".json")).string();
  const std::string out_path = (dir / ("nt_jinja_out_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(in_path) << in.dump();
  const std::string cmd = std::string("/usr/bin/python3 -c 'import json, sys; sys.path.insert(0, \"") + NT_SOURCE_DIR +
                          "/tools/core_ref\"); from core_ref import render; "
                          "cases = json.load(open(sys.argv[1])); "
                          "json.dump([render(c[\"type\"], c[\"item\"], c[\"delim\"], c[\"shots\"]) for c in cases], "
                          "open(sys.argv[2], \"w\"))' " +
                          in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  nlohmann::json out;
  std::ifstream(out_path) >> out;
  std::filesystem::remove(in_path);
  std::filesystem::remove(out_path);
  ASSERT_EQ(out.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<const CoreItem*> shots;
    for (const auto& s : cases[i].shots) shots.push_back(&s);
    const auto got = render_prompts(cases[i].type, cases[i].delim, cases[i].item, shots);
    ASSERT_EQ(got, out[i].get<std::vector<std::string>>()) << "case " << i << ": " << in[i].dump();
  }
}

}  // namespace
}  // namespace nt
