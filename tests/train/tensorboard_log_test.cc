// SPDX-License-Identifier: MIT
// `train --tensorboard`'s log: the scalars of a metrics line, and the trimming a resumed run does
// (events past the lines it keeps removed, a half-written record dropped, other files untouched).
#include "train/tensorboard_log.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/files.h"
#include "test_util.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

// The steps of every event in dir, files in the order of their first line.
std::vector<int64_t> steps_in(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find("tfevents") != std::string::npos)
      files.push_back({std::stoll(name.substr(name.rfind('.') + 1)), e.path().string()});
  }
  std::sort(files.begin(), files.end());
  std::vector<int64_t> steps;
  for (const auto& [first, path] : files) {
    const std::string contents = read_file(path);
    for (const profile::Record& r : profile::read_records(contents)) {
      const profile::ScalarEvent ev = profile::decode_event(r.data, path);
      if (ev.file_version.empty()) steps.push_back(ev.step);
    }
  }
  return steps;
}

TEST(TensorBoardLog, TagsEveryNumberOfALine) {
  const auto s = metric_scalars(
      nlohmann::json::parse(R"({"type": "step", "step": 7, "loss": 2.5, "mfu": 0.25, "note": "x", "ok": true})"));
  EXPECT_EQ(s, (std::vector<std::pair<std::string, float>>{{"train/loss", 2.5f}, {"train/mfu", 0.25f}}));
  const auto c = metric_scalars(
      nlohmann::json::parse(R"({"type": "core", "step": 9, "core": 0.125, "tasks": {"hs": {"accuracy": 0.5}}})"));
  EXPECT_EQ(c, (std::vector<std::pair<std::string, float>>{{"core/core", 0.125f}, {"core/tasks/hs/accuracy", 0.5f}}));
}

TEST(TensorBoardLog, AResumeKeepsTheEventsOfTheLinesItKeeps) {
  const std::string run = test::tmp_dir("tensorboard_log/resume");
  {
    TensorBoardLog log(run, 0);
    for (int step = 1; step <= 10; ++step) log.log({{"type", "step"}, {"step", step}, {"loss", 1.0 / step}});
  }
  const std::string dir = tensorboard_dir(run);
  write_file_atomic(dir + "/notes.txt", "kept");
  EXPECT_EQ(steps_in(dir), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  {
    TensorBoardLog log(run, 6);  // resumed from a checkpoint that counted 6 lines
    for (int step = 7; step <= 12; ++step) log.log({{"type", "step"}, {"step", step}, {"loss", 1.0 / step}});
  }
  EXPECT_EQ(steps_in(dir), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  trim_event_files(dir, 3);
  EXPECT_EQ(steps_in(dir), (std::vector<int64_t>{1, 2, 3}));
  trim_event_files(dir, 0);
  EXPECT_EQ(steps_in(dir), std::vector<int64_t>{});
  EXPECT_EQ(read_file(dir + "/notes.txt"), "kept");
}

}  // namespace
}  // namespace nt
