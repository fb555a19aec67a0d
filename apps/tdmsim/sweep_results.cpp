#include "apps/tdmsim/sweep_results.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/core.h>

#include "apps/tdmsim/csv_field.h"
#include "workloads/specs/sweep_spec.h"
#include "workloads/util/atomic_write.h"

namespace tdmsim::cli {
namespace {

using config::Json;

constexpr const char* kJsonl = "results.jsonl";
constexpr const char* kCsv = "results.csv";

// The stages a layer can have, in kernel order (see sim/programs/moe_kernels.h).
constexpr const char* kStages[] = {"routing", "sort", "gate_up", "reduce", "down", "fused"};

// The CSV's fixed columns after the axis columns: name and where in a journal row.
struct Column {
  const char* name;
  const char* pointer;  // JSON pointer into the row; empty: computed
};
constexpr Column kColumns[] = {
    {"path", "/path"},
    {"scenario", "/scenario"},
    {"machine", "/machine"},
    {"model", "/model"},
    {"tokens", "/tokens"},
    {"dtype", "/dtype"},
    {"total_us", "/metrics/total_us"},
    {"floor_us", "/metrics/floor/us"},
    {"over_floor", "/metrics/over_floor"},
    {"bound", "/metrics/floor/bound"},
    {"achieved_tflops", "/metrics/achieved_tflops"},
    {"hbm_tbps", "/metrics/hbm_tbps"},
    {"hbm_bytes", "/metrics/hbm_bytes"},
    {"cu_utilization", "/metrics/cu_utilization"},
    {"matrix_utilization", "/metrics/matrix_utilization"},
    {"bubble_fraction", "/metrics/bubble_fraction"},
    {"l2_hit_rate", "/metrics/l2_hit_rate"},
    {"mall_hit_rate", "/metrics/mall_hit_rate"},
    {"hbm_row_hit_rate", "/metrics/hbm_row_hit_rate"},
    {"padding_waste", "/layer/padding_waste"},
    {"load_max_over_mean", "/layer/load_spread/max_over_mean"},
    {"load_cv", "/layer/load_spread/cv"},
    {"capacity", "/layer/capacity/capacity"},
    {"dropped_pairs", "/layer/capacity/dropped_pairs"},
    {"dropped_fraction", "/layer/capacity/dropped_fraction"},
    {"rerouted_pairs", "/layer/capacity/rerouted_pairs"},
    {"rerouted_fraction", "/layer/capacity/rerouted_fraction"},
    {"kernel_stages", "/layer/stages"},
    {"block_m", "/layer/block_m"},
    {"split_k", "/layer/split_k"},
    {"kernel_chosen_by", "/layer/kernel_source/chosen_by"},
    {"kernel_config_line", "/layer/kernel_source/config/line"},
    // Expert-parallel points (parallel.ep > 1; docs/expert-parallel.md), empty otherwise.
    {"gpus", "/metrics/ep/gpus"},
    {"ep_slowest_rank", "/metrics/ep/slowest_rank"},
    {"ep_compute_max_us", "/metrics/ep/compute_max_us"},
    {"ep_compute_mean_us", "/metrics/ep/compute_mean_us"},
    {"ep_dispatch_us", "/metrics/ep/dispatch/time_us"},
    {"ep_combine_us", "/metrics/ep/combine/time_us"},
    {"ep_wait_max_us", "/metrics/ep/wait_max_us"},
    {"ep_rank_picks_max_over_mean", "/layer/ep/rank_picks_max_over_mean"},
};

// With repeat: N > 1, after the stage columns: the draws, the spread of the
// layer time (total_us is then the mean), and the point's TDM speedup (mean of
// software / tdm per draw) with its interval, on every row of a point that ran both paths.
constexpr Column kRepeatColumns[] = {
    {"repeat", "/repeat/n"},
    {"total_us_sd", "/repeat/total_us/sd"},
    {"total_us_ci95_low", "/repeat/total_us/ci95_low"},
    {"total_us_ci95_high", "/repeat/total_us/ci95_high"},
    {"tdm_speedup", "/repeat/tdm_speedup/mean"},
    {"tdm_speedup_ci95_low", "/repeat/tdm_speedup/ci95_low"},
    {"tdm_speedup_ci95_high", "/repeat/tdm_speedup/ci95_high"},
};


std::string scalar_text(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int open_append(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open '" + p.string() + "': " + std::strerror(errno));
  return fd;
}

}  // namespace

void append_whole(int fd, const std::string& text, const fs::path& what) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot write '" + what.string() + "': " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  ::fdatasync(fd);
}

ResultsJournal::ResultsJournal(fs::path dir, std::vector<std::string> axis_columns,
                               std::function<bool(const Json&)> current, bool repeat_columns,
                               std::function<bool(std::uint64_t)> jitter_point)
    : dir_(std::move(dir)),
      axis_columns_(std::move(axis_columns)),
      current_(std::move(current)),
      repeat_columns_(repeat_columns),
      jitter_point_(std::move(jitter_point)) {
  load();
  open_for_append();
}

ResultsJournal::~ResultsJournal() {
  if (jsonl_fd_ >= 0) ::close(jsonl_fd_);
  if (csv_fd_ >= 0) ::close(csv_fd_);
  if (timing_fd_ >= 0) ::close(timing_fd_);
}

void ResultsJournal::note_wall_time(std::uint64_t point, double wall_s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (timing_fd_ < 0) {
    const fs::path p = dir_ / "timing.csv";
    const bool fresh = !fs::exists(p);
    timing_fd_ = open_append(p);
    if (fresh) append_whole(timing_fd_, "point,wall_s\n", p);
  }
  append_whole(timing_fd_, fmt::format("{},{:.3f}\n", point, wall_s), dir_ / "timing.csv");
}

// An axis column's name: the axis key, but a machine or model axis's is
// machine_ref / model_ref (the value as written, a name or a file), beside the
// fixed machine and model columns (the `name:` the file gives, which two files
// of one base may share).
std::string axis_column_name(const std::string& key) {
  if (const auto ref = axis_ref(key)) {
    if (ref->target == AxisTarget::machine) return "machine_ref";
    if (ref->target == AxisTarget::model) return "model_ref";
  }
  return key;
}

std::string ResultsJournal::csv_header() const {
  std::string h = "point";
  for (const auto& a : axis_columns_) h += "," + csv_field(axis_column_name(a));
  for (const auto& c : kColumns) h += std::string(",") + c.name;
  for (const auto* s : kStages) h += std::string(",") + s + "_us";
  if (repeat_columns_) {
    for (const auto& c : kRepeatColumns) h += std::string(",") + c.name;
  }
  if (jitter_point_) h += ",jitter";
  return h;
}

std::string ResultsJournal::csv_row(const Json& row) const {
  std::string r = scalar_text(row.at("point"));
  const Json& inputs = row.at("inputs");
  // (Appended in two steps: GCC 12 warns, falsely, of an overflowing memcpy
  // in `"," + std::string&&`, -Wstringop-overflow.)
  for (const auto& a : axis_columns_) {
    r += ',';
    r += csv_field(inputs.contains(a) ? scalar_text(inputs[a]) : "");
  }
  for (const auto& c : kColumns) {
    const Json::json_pointer ptr(c.pointer);
    r += ',';
    r += csv_field(row.contains(ptr) ? scalar_text(row[ptr]) : "");
  }
  // A stage may be several kernels (our sort is four): their times add up.
  std::map<std::string, Json> stage_us;
  for (const auto& st : row.at("metrics").at("stages")) {
    Json& t = stage_us[st.at("stage").get<std::string>()];
    t = t.is_null() ? st.at("time_us") : Json(t.get<double>() + st.at("time_us").get<double>());
  }
  for (const auto* s : kStages) r += "," + (stage_us.count(s) ? scalar_text(stage_us[s]) : std::string());
  if (repeat_columns_) {
    for (const auto& c : kRepeatColumns) {
      // tdm_speedup is null on a point without both paths: an empty cell.
      const Json::json_pointer ptr(c.pointer);
      const Json* v = nullptr;
      try {
        v = &row.at(ptr);
      } catch (const Json::exception&) {
      }
      r += "," + csv_field(v != nullptr ? scalar_text(*v) : std::string());
    }
  }
  // Derived from the point's index, not stored in the journal: the sweep's
  // axes say which values are jitter.
  if (jitter_point_) r += jitter_point_(row.at("point").get<std::uint64_t>()) ? ",yes" : ",no";
  return r;
}

// Reads the journal: whole, parseable lines only; then keeps the points whose
// rows are all present and current. Anything else (a torn tail, which a kill in the middle
// of a write can leave) is dropped and both files are rewritten.
void ResultsJournal::load() {
  const fs::path jsonl = dir_ / kJsonl;
  const std::string text = fs::exists(jsonl) ? read_all(jsonl) : std::string();
  std::vector<Json> lines;
  bool dropped = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      dropped = true;  // a torn last line
      break;
    }
    Json j = Json::parse(text.begin() + static_cast<std::ptrdiff_t>(pos),
                         text.begin() + static_cast<std::ptrdiff_t>(nl), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("point") || !j.contains("rows_in_point")) {
      dropped = true;
    } else {
      lines.push_back(std::move(j));
    }
    pos = nl + 1;
  }
  std::map<std::uint64_t, std::size_t> count, want;
  std::set<std::uint64_t> stale;  // a point with a row whose inputs have changed
  for (const auto& j : lines) {
    const auto p = j["point"].get<std::uint64_t>();
    ++count[p];
    want[p] = j["rows_in_point"].get<std::size_t>();
    if (current_ && !current_(j)) stale.insert(p);
  }
  // Counted as "finished point(s) run again": whole points only (a torn
  // one is run again whatever its inputs).
  stale_ = static_cast<std::size_t>(std::count_if(stale.begin(), stale.end(), [&](std::uint64_t p) {
    return count[p] == want[p];
  }));
  for (auto& j : lines) {
    const auto p = j["point"].get<std::uint64_t>();
    if (count[p] == want[p] && !stale.contains(p)) rows_.push_back(std::move(j));
    else dropped = true;
  }
  for (const auto& [p, n] : count) {
    if (n == want[p] && !stale.contains(p)) done_.insert(p);
  }
  // results.csv is derived from the journal: rebuild it whenever the journal
  // was trimmed or the two may disagree (a kill between the two appends).
  std::string csv = csv_header() + "\n";
  for (const auto& r : rows_) csv += csv_row(r) + "\n";
  if (dropped) {
    std::string journal;
    for (const auto& r : rows_) journal += r.dump() + "\n";
    util::write_file_atomic(jsonl, journal);
  }
  if (!fs::exists(dir_ / kCsv) || read_all(dir_ / kCsv) != csv) util::write_file_atomic(dir_ / kCsv, csv);
  if (!fs::exists(jsonl)) util::write_file_atomic(jsonl, "");
}

void ResultsJournal::open_for_append() {
  jsonl_fd_ = open_append(dir_ / kJsonl);
  csv_fd_ = open_append(dir_ / kCsv);
}

void ResultsJournal::append(const std::vector<Json>& rows) {
  if (rows.empty()) return;
  std::string journal, csv;
  for (const auto& r : rows) {
    journal += r.dump() + "\n";
    csv += csv_row(r) + "\n";
  }
  std::lock_guard<std::mutex> lock(mu_);
  append_whole(jsonl_fd_, journal, dir_ / kJsonl);  // the journal first: it is the record
  append_whole(csv_fd_, csv, dir_ / kCsv);
  for (const auto& r : rows) rows_.push_back(r);
  done_.insert(rows.front()["point"].get<std::uint64_t>());
}

void ResultsJournal::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  std::stable_sort(rows_.begin(), rows_.end(), [](const Json& a, const Json& b) {
    return a["point"].get<std::uint64_t>() < b["point"].get<std::uint64_t>();
  });
  std::string journal, csv = csv_header() + "\n";
  for (const auto& r : rows_) {
    journal += r.dump() + "\n";
    csv += csv_row(r) + "\n";
  }
  // Renamed into place: an appender holding the old file keeps writing to the
  // unlinked one, so reopen after.
  util::write_file_atomic(dir_ / kJsonl, journal);
  util::write_file_atomic(dir_ / kCsv, csv);
  ::close(jsonl_fd_);
  ::close(csv_fd_);
  open_for_append();
}


}  // namespace tdmsim::cli
