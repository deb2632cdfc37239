// SPDX-License-Identifier: MIT
// The JSONL items of a task and the baselines CSV (see bundle.h).
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "eval/core/bundle.h"

namespace nt {

namespace {

// One CSV record per row, RFC 4180 quoting ("" inside quotes is a quote); rows with no text are
// dropped, as Python's csv.DictReader drops them. Each record keeps its first line number.
struct CsvRow {
  std::vector<std::string> cells;
  int line = 0;
};

std::vector<CsvRow> split_csv(const std::string& text, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string cell;
  bool quoted = false, any = false;
  int line = 1;
  row.line = 1;
  size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // a byte-order mark is not part of the header
  auto end_row = [&] {
    row.cells.push_back(cell);
    cell.clear();
    if (any) rows.push_back(row);
    row = CsvRow{};
    row.line = line;
    any = false;
  };
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        cell += text[++i];
      else if (c == '"')
        quoted = false;
      else {
        if (c == '\n') ++line;
        cell += c;
      }
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      row.cells.push_back(cell);
      cell.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++line;
      end_row();
    } else {
      cell += c;
      any = true;
    }
  }
  if (quoted) fail("%s:%d: a quoted field is not closed", path.c_str(), row.line);
  end_row();
  return rows;
}

std::string trim_ascii(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

std::vector<std::pair<std::string, double>> parse_baselines_csv(const std::string& text, const std::string& path) {
  const auto rows = split_csv(text, path);
  if (rows.empty()) fail("%s:1: empty; needs the columns 'Eval Task' and 'Random baseline'", path.c_str());
  int task_col = -1, base_col = -1;
  for (size_t c = 0; c < rows[0].cells.size(); ++c) {
    if (rows[0].cells[c] == "Eval Task" && task_col < 0) task_col = int(c);
    if (rows[0].cells[c] == "Random baseline" && base_col < 0) base_col = int(c);
  }
  if (task_col < 0 || base_col < 0) fail("%s:1: needs the columns 'Eval Task' and 'Random baseline'", path.c_str());
  std::vector<std::pair<std::string, double>> out;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& cells = rows[r].cells;
    if (cells.size() <= size_t(std::max(task_col, base_col))) continue;  // a short row names no baseline
    const std::string v = trim_ascii(cells[size_t(base_col)]);
    char* end = nullptr;
    const double b = v.empty() ? NAN : std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(b) || b < 0 || b >= 100)
      fail("%s:%d: task '%s': random baseline '%s' must be a percentage in [0, 100)", path.c_str(), rows[r].line,
           cells[size_t(task_col)].c_str(), v.c_str());
    out.emplace_back(cells[size_t(task_col)], b);
  }
  return out;
}

namespace {

using nlohmann::json;

const json& field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) fail("has no '%s'", key);
  return *it;
}

std::string string_field(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_string()) fail("'%s' must be a string", key);
  return v.get<std::string>();
}

std::vector<std::string> strings_field(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_array() || v.empty()) fail("'%s' must be a non-empty list of strings", key);
  std::vector<std::string> out;
  for (const json& s : v) {
    if (!s.is_string()) fail("'%s' must be a non-empty list of strings", key);
    out.push_back(s.get<std::string>());
  }
  return out;
}

int gold_field(const json& j, size_t options, const char* of) {
  const json& v = field(j, "gold");
  if (!v.is_number_integer()) fail("'gold' must be an integer");
  const int64_t g = v.get<int64_t>();
  if (g < 0 || g >= int64_t(options)) fail("'gold' %lld is outside %s (%zu)", (long long)g, of, options);
  return int(g);
}

// One item; throws nt::Error with the reason only (the caller adds file and line).
CoreItem parse_item(const std::string& line, CoreTaskType type) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    fail("not a JSON object (%s)", e.what());
  }
  if (!j.is_object()) fail("not a JSON object");
  CoreItem it;
  switch (type) {
    case CoreTaskType::kMultipleChoice:
      it.query = string_field(j, "query");
      it.choices = strings_field(j, "choices");
      it.gold = gold_field(j, it.choices.size(), "choices");
      break;
    case CoreTaskType::kSchema:
      it.choices = strings_field(j, "context_options");
      it.continuation = string_field(j, "continuation");
      it.gold = gold_field(j, it.choices.size(), "context_options");
      break;
    case CoreTaskType::kLanguageModeling:
      it.query = string_field(j, "context");
      it.continuation = string_field(j, "continuation");
      break;
  }
  return it;
}

}  // namespace

std::vector<CoreItem> parse_task_items(const std::string& text, const std::string& path, CoreTaskType type,
                                       const BundleOptions& opt) {
  std::vector<CoreItem> items;
  size_t pos = 0;
  for (int64_t n = 1; pos < text.size(); ++n) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    try {
      CoreItem it = parse_item(line, type);
      it.line = n;
      items.push_back(std::move(it));
    } catch (const Error& e) {
      const std::string msg =
          strf("%s:%lld: %s item: %s", path.c_str(), (long long)n, core_task_type_name(type), e.what());
      if (!opt.skip_bad) throw Error(msg);
      if (opt.on_skip) opt.on_skip("skipped " + msg);
    }
  }
  return items;
}

}  // namespace nt
