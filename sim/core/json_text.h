// JSON text written directly, byte for byte as nlohmann::ordered_json's
// dump(indent) writes the same values, for outputs too large to build as a
// tree first (a run's stats: thousands of {"value", "unit", "desc"} objects).
// Numbers go through nlohmann's own serializer, so their digits are its
// digits; strings of printable ASCII are copied, anything else (quotes,
// backslashes, control characters, UTF-8) is escaped by nlohmann too.
// tests/sim/test_json_text.cpp compares each against dump().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdmsim::sim {

class JsonText {
 public:
  explicit JsonText(std::string& out);
  ~JsonText();
  JsonText(const JsonText&) = delete;
  JsonText& operator=(const JsonText&) = delete;

  // A string value, quoted and escaped.
  void string(std::string_view s);
  // A number: as nlohmann writes an unsigned integer / a double (NaN and
  // infinities as null).
  void number(std::uint64_t v);
  void number(double v);
  void raw(std::string_view s) { out_.append(s); }
  // Newline and `n` spaces.
  void newline(unsigned n) {
    out_.push_back('\n');
    out_.append(n, ' ');
  }

 private:
  std::string& out_;
  struct Serializer;
  std::unique_ptr<Serializer> serializer_;  // nlohmann's, writing into out_
};

// The text dump(indent_step) gives for an object whose members' values are
// already text, each as dump(indent_step) writes that value on its own
// (members: key, value text). The values are indented by one more level.
std::string json_object_text(const std::vector<std::pair<std::string, std::string>>& members,
                             unsigned indent_step);

}  // namespace tdmsim::sim
