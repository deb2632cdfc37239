// SPDX-License-Identifier: MIT
// The run folder: where each file lives, metrics.jsonl cut back to a checkpoint's line count
// when a run continues, and a folder without weights refused for sample / eval naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/files.h"
#include "test_util.h"
#include "train/run_folder.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(RunFolder, FilesHaveTheirPlaces) {
  const std::string dir = test::tmp_dir("run_folder/places") + "/run";
  fs::remove_all(dir);
  RunFolder run(dir, RunMode::kNew);
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(run.config_path(), (fs::path(dir) / "config.json").string());
  EXPECT_EQ(run.metrics_path(), (fs::path(dir) / "metrics.jsonl").string());
  EXPECT_EQ(run.summary_path(), (fs::path(dir) / "summary.json").string());
  EXPECT_EQ(run.weights_path(), (fs::path(dir) / "model.safetensors").string());
  EXPECT_EQ(run.checkpoint_path(3), checkpoint_path(dir, 3));
}

TEST(RunFolder, ResumedMetricsKeepTheCheckpointsLines) {
  const std::string dir = test::tmp_dir("run_folder/metrics");
  {
    RunFolder run(dir, RunMode::kNew);
    run.open_metrics(0);
    for (int i = 1; i <= 5; ++i) run.log_metric({{"type", "step"}, {"step", i}});
    EXPECT_EQ(run.metrics_lines(), 5);
  }
  {
    RunFolder run(dir, RunMode::kResume);
    run.open_metrics(3);  // the checkpoint counted 3 lines; 2 more were logged after it
    EXPECT_EQ(count_lines(run.read_metrics()), 3);
    run.log_metric({{"type", "step"}, {"step", 4}});
    EXPECT_EQ(run.metrics_lines(), 4);
    EXPECT_EQ(count_lines(run.read_metrics()), 4);
  }
  // A new run refuses the folder; --overwrite starts over in it.
  EXPECT_NE(test::error_of([&] { RunFolder again(dir, RunMode::kNew); }).find("already holds a run"), std::string::npos);
  RunFolder fresh(dir, RunMode::kOverwrite);
  fresh.open_metrics(0);
  EXPECT_EQ(fresh.read_metrics(), "");
}

// One writer at a time: a second claim of a folder in use fails naming the holder (this
// process); once the first is gone, the folder can be claimed again.
TEST(RunFolder, OneWriterAtATime) {
  const std::string dir = test::tmp_dir("run_folder/lock");
  {
    RunFolder first(dir, RunMode::kNew);
    const std::string e = test::error_of([&] { RunFolder second(dir, RunMode::kResume); });
    EXPECT_NE(e.find("in use by another nanotrain process (pid " + std::to_string(::getpid()) + ")"),
              std::string::npos)
        << e;
  }
  RunFolder later(dir, RunMode::kResume);
  EXPECT_TRUE(later.run_id().empty());  // no config.json: a run without an id
}

// A folder made for a run that failed before writing anything is removed again; one that
// existed before is kept.
TEST(RunFolder, AFailedStartLeavesNothing) {
  const std::string base = test::tmp_dir("run_folder/failed");
  { RunFolder run(base + "/new", RunMode::kNew); }
  EXPECT_FALSE(fs::exists(base + "/new"));
  fs::create_directory(base + "/kept");
  { RunFolder run(base + "/kept", RunMode::kNew); }
  EXPECT_TRUE(fs::is_directory(base + "/kept"));
}

TEST(RunFolder, TrainedRunWithoutWeightsNamesTheFile) {
  const std::string dir = test::tmp_dir("run_folder/unfinished");
  try {
    open_trained_run(dir);
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors: missing"), std::string::npos) << e.what();
  }
  try {
    open_trained_run(dir + "/nope");
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--run-dir"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nt
