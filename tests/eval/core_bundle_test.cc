// SPDX-License-Identifier: MIT
// The bundle reader: a good bundle in the official layout, and one test per kind of bad input,
// each asserting that the one-line error names the file and the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "eval/core/bundle.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nt_core_bundle_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "eval_data" / "lm");
    write("core.yaml",
          "icl_tasks:\n"
          "- label: mc\n"
          "  dataset_uri: mc.jsonl\n"
          "  num_fewshot: [2]\n"
          "  icl_task_type: multiple_choice\n"
          "- label: sc\n"
          "  dataset_uri: sc.jsonl\n"
          "  num_fewshot: [0]\n"
          "  icl_task_type: schema\n"
          "  continuation_delimiter: \"\\nAnswer: \"\n"
          "- label: lm\n"
          "  dataset_uri: lm/lm.jsonl\n"
          "  num_fewshot: [1, 5]\n"
          "  icl_task_type: language_modeling\n");
    write("eval_meta_data.csv", "Category,Eval Task,Random baseline\nx,mc,25\n\"y, z\",sc,50.0\nx,lm,0\n");
    write("eval_data/mc.jsonl",
          "{\"query\": \"Q1\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n"
          "{\"query\": \"Q2\", \"choices\": [\"c\"], \"gold\": 0}\n");
    write("eval_data/sc.jsonl", "{\"context_options\": [\"A\", \"B\"], \"continuation\": \"c\", \"gold\": 0}\n");
    write("eval_data/lm/lm.jsonl", "{\"context\": \" The \", \"continuation\": \"end\"}\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel, std::ios::binary) << text; }
  std::string path(const std::string& rel) const { return (dir_ / rel).string(); }
  // The error of reading the bundle ("" if it reads).
  std::string error(const BundleOptions& opt = {}) {
    try {
      read_bundle(dir_.string(), opt);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    return "";
  }
  void expect_error(const std::string& where, const std::string& what) {
    const std::string e = error();
    EXPECT_NE(e.find(where), std::string::npos) << "error: " << e << "\nexpected to name: " << where;
    EXPECT_NE(e.find(what), std::string::npos) << "error: " << e << "\nexpected to say: " << what;
  }
  fs::path dir_;
};

TEST_F(BundleTest, ReadsTheOfficialLayout) {
  const CoreBundle b = read_bundle(dir_.string());
  ASSERT_EQ(b.tasks.size(), 3u);
  EXPECT_EQ(b.tasks[0].label, "mc");
  EXPECT_EQ(b.tasks[0].type, CoreTaskType::kMultipleChoice);
  EXPECT_EQ(b.tasks[0].shots, 2);
  EXPECT_EQ(b.tasks[0].delimiter, " ");
  EXPECT_EQ(b.tasks[0].baseline, 25.0);
  ASSERT_EQ(b.tasks[0].items.size(), 2u);
  EXPECT_EQ(b.tasks[0].items[0].choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(b.tasks[0].items[0].gold, 1);
  EXPECT_EQ(b.tasks[0].items[1].line, 2);
  EXPECT_EQ(b.tasks[1].delimiter, "\nAnswer: ");
  EXPECT_EQ(b.tasks[1].baseline, 50.0);  // the quoted cell with a comma did not shift the columns
  EXPECT_EQ(b.tasks[1].items[0].continuation, "c");
  EXPECT_EQ(b.tasks[2].shots, 1);  // only num_fewshot[0] counts
  EXPECT_EQ(b.tasks[2].items[0].query, " The ");
  EXPECT_EQ(b.checksum.size(), 64u);
  // The checksum follows the content.
  write("eval_data/sc.jsonl", "{\"context_options\": [\"A\", \"B\"], \"continuation\": \"d\", \"gold\": 0}\n");
  EXPECT_NE(read_bundle(dir_.string()).checksum, b.checksum);
}

TEST_F(BundleTest, TaskFilter) {
  BundleOptions o;
  o.tasks = {"lm"};
  const CoreBundle b = read_bundle(dir_.string(), o);
  ASSERT_EQ(b.tasks.size(), 1u);
  EXPECT_EQ(b.tasks[0].label, "lm");
  o.tasks = {"nope"};
  EXPECT_NE(error(o).find("--tasks: 'nope'"), std::string::npos) << error(o);
}

TEST_F(BundleTest, MissingFiles) {
  fs::remove(dir_ / "eval_data/lm/lm.jsonl");
  expect_error(path("eval_data/lm/lm.jsonl"), "not found");
  expect_error(path("core.yaml") + ":11", "task 'lm'");
  fs::remove(dir_ / "eval_meta_data.csv");
  expect_error(path("eval_meta_data.csv"), "");
  fs::remove(dir_ / "core.yaml");
  expect_error(path("core.yaml"), "");
}

TEST_F(BundleTest, UnknownTaskType) {
  write("core.yaml",
        "icl_tasks:\n- label: mc\n  dataset_uri: mc.jsonl\n  num_fewshot: [0]\n  icl_task_type: generation\n");
  expect_error(path("core.yaml") + ":2:", "unknown icl_task_type 'generation'");
}

TEST_F(BundleTest, BadYaml) {
  write("core.yaml", "icl_tasks:\n- label: mc\n  dataset_uri: [unclosed\n");
  expect_error(path("core.yaml") + ":", "not valid YAML");
  write("core.yaml", "tasks: []\n");
  expect_error(path("core.yaml") + ":1", "icl_tasks");
  write("core.yaml", "icl_tasks:\n- label: mc\n  icl_task_type: schema\n  num_fewshot: [0]\n");
  expect_error(path("core.yaml") + ":2", "no 'dataset_uri'");
  write("core.yaml", "icl_tasks:\n- label: mc\n  dataset_uri: mc.jsonl\n  icl_task_type: schema\n  num_fewshot: 3\n");
  expect_error(path("core.yaml") + ":5", "num_fewshot");
  write("core.yaml",
        "icl_tasks:\n- label: mc\n  dataset_uri: ../mc.jsonl\n  icl_task_type: schema\n  num_fewshot: [0]\n");
  expect_error(path("core.yaml") + ":2", "inside eval_data/");
  write("core.yaml",
        "icl_tasks:\n- label: mc\n  dataset_uri: mc.jsonl\n  icl_task_type: multiple_choice\n  num_fewshot: [0]\n"
        "- label: mc\n  dataset_uri: mc.jsonl\n  icl_task_type: multiple_choice\n  num_fewshot: [0]\n");
  expect_error(path("core.yaml") + ":6", "listed twice");
}

TEST_F(BundleTest, TaskWithoutBaseline) {
  write("eval_meta_data.csv", "Eval Task,Random baseline\nmc,25\nlm,0\n");
  expect_error(path("eval_meta_data.csv"), "task 'sc' (" + path("core.yaml") + ":6)");
}

TEST_F(BundleTest, BadBaseline) {
  write("eval_meta_data.csv", "Eval Task,Random baseline\nmc,25\nsc,abc\nlm,0\n");
  expect_error(path("eval_meta_data.csv") + ":3", "'abc'");
  write("eval_meta_data.csv", "Eval Task,Random baseline\nmc,25\nsc,100\nlm,0\n");
  expect_error(path("eval_meta_data.csv") + ":3", "[0, 100)");
  write("eval_meta_data.csv", "Task,Baseline\nmc,25\n");
  expect_error(path("eval_meta_data.csv") + ":1", "'Eval Task'");
}

TEST_F(BundleTest, MalformedJsonLine) {
  write("eval_data/mc.jsonl", "{\"query\": \"Q1\", \"choices\": [\"a\"], \"gold\": 0}\n{\"query\": \"Q2\", \n");
  expect_error(path("eval_data/mc.jsonl") + ":2:", "not a JSON object");
  write("eval_data/mc.jsonl", "{\"query\": \"Q1\", \"choices\": [\"a\"], \"gold\": 0}\n\n");
  expect_error(path("eval_data/mc.jsonl") + ":2:", "not a JSON object");
  write("eval_data/mc.jsonl", "[1, 2]\n");
  expect_error(path("eval_data/mc.jsonl") + ":1:", "not a JSON object");
}

TEST_F(BundleTest, GoldOutOfRange) {
  write("eval_data/mc.jsonl",
        "{\"query\": \"Q1\", \"choices\": [\"a\"], \"gold\": 0}\n"
        "{\"query\": \"Q1\", \"choices\": [\"a\", \"b\"], \"gold\": 2}\n");
  expect_error(path("eval_data/mc.jsonl") + ":2:", "'gold' 2 is outside choices (2)");
  write("eval_data/sc.jsonl", "{\"context_options\": [\"A\"], \"continuation\": \"c\", \"gold\": -1}\n");
  write("eval_data/mc.jsonl", "{\"query\": \"Q1\", \"choices\": [\"a\"], \"gold\": 0}\n");
  expect_error(path("eval_data/sc.jsonl") + ":1:", "'gold' -1 is outside context_options");
  write("eval_data/sc.jsonl", "{\"context_options\": [\"A\"], \"continuation\": \"c\", \"gold\": \"0\"}\n");
  expect_error(path("eval_data/sc.jsonl") + ":1:", "'gold' must be an integer");
}

TEST_F(BundleTest, EmptyChoices) {
  write("eval_data/mc.jsonl", "{\"query\": \"Q1\", \"choices\": [], \"gold\": 0}\n");
  expect_error(path("eval_data/mc.jsonl") + ":1:", "'choices' must be a non-empty list of strings");
  write("eval_data/mc.jsonl", "{\"query\": \"Q1\", \"choices\": [\"a\", 3], \"gold\": 0}\n");
  expect_error(path("eval_data/mc.jsonl") + ":1:", "'choices' must be a non-empty list of strings");
}

TEST_F(BundleTest, MissingField) {
  write("eval_data/lm/lm.jsonl", "{\"context\": \"x\", \"continuation\": \"y\"}\n{\"context\": \"x\"}\n");
  expect_error(path("eval_data/lm/lm.jsonl") + ":2:", "has no 'continuation'");
  write("eval_data/lm/lm.jsonl", "{\"context\": 5, \"continuation\": \"y\"}\n");
  expect_error(path("eval_data/lm/lm.jsonl") + ":1:", "'context' must be a string");
}

TEST_F(BundleTest, TaskWithNoItems) {
  write("eval_data/sc.jsonl", "");
  expect_error(path("eval_data/sc.jsonl"), "task 'sc' has no items");
}

TEST_F(BundleTest, SkipBadReportsAndLeavesOut) {
  write("eval_data/mc.jsonl",
        "{\"query\": \"Q1\", \"choices\": [\"a\"], \"gold\": 0}\n"
        "not json\n"
        "{\"query\": \"Q3\", \"choices\": [\"a\", \"b\"], \"gold\": 5}\n"
        "{\"query\": \"Q4\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n");
  BundleOptions o;
  o.skip_bad = true;
  std::vector<std::string> skipped;
  o.on_skip = [&](const std::string& s) { skipped.push_back(s); };
  const CoreBundle b = read_bundle(dir_.string(), o);
  ASSERT_EQ(b.tasks[0].items.size(), 2u);
  EXPECT_EQ(b.tasks[0].items[1].line, 4);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find(path("eval_data/mc.jsonl") + ":2:"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find(path("eval_data/mc.jsonl") + ":3:"), std::string::npos) << skipped[1];
}

}  // namespace
}  // namespace nt
