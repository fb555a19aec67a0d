// Generates the YAML reference (docs/yaml-reference.md, `tdmsim config reference`)
// from the same parameter declarations that drive parsing, so it cannot drift.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/config/schema.h"

namespace tdmsim::config {

struct ReferenceRow {
  std::string key;          // dotted key path
  std::string type;         // "integer", "frequency (Hz, ...)", "one of: a, b"
  std::string default_text; // "required", "(none)" or the default's canonical text
  std::string range;        // "1 .. 64" or ""
  std::string doc;
  bool is_section = false;
};

class ReferenceWriter {
 public:
  explicit ReferenceWriter(std::string prefix = {}) : prefix_(std::move(prefix)) {}

  template <class T, class... Opts>
  void param(T&, std::string_view key, std::string_view doc, const Opts&... opts) {
    ReferenceRow row{prefix_ + std::string(key), {}, {}, {}, std::string(doc)};
    if constexpr (IsVector<T>::value) {
      row.type = "list of " + type_of<typename T::value_type>();
      row.default_text = "[]";
      (void)sizeof...(opts);
    } else {
      const auto meta = make_meta<T>(opts...);
      row.type = type_of<T>();
      row.default_text = meta.required ? "required"
                         : meta.def    ? "`" + ValueTraits<T>::text(*meta.def) + "`"
                                       : "(empty)";
      if constexpr (!std::is_same_v<T, bool> && !std::is_enum_v<T> &&
                    !std::is_same_v<T, std::string>) {
        if (meta.min || meta.max) {
          row.range = (meta.min ? ValueTraits<T>::text(*meta.min) : std::string("")) + " .. " +
                      (meta.max ? ValueTraits<T>::text(*meta.max) : std::string(""));
        }
      }
    }
    rows.push_back(std::move(row));
  }
  template <class S>
  void section(S& member, std::string_view key, std::string_view doc) {
    rows.push_back({prefix_ + std::string(key), "section", "", "", std::string(doc), true});
    ReferenceWriter sub(prefix_ + std::string(key) + ".");
    member.visit(sub);
    rows.insert(rows.end(), sub.rows.begin(), sub.rows.end());
  }
  template <class S>
  void section(std::optional<S>&, std::string_view key, std::string_view doc) {
    S s = defaults<S>();
    rows.push_back({prefix_ + std::string(key), "optional section (`~` removes it)", "absent", "",
                    std::string(doc), true});
    ReferenceWriter sub(prefix_ + std::string(key) + ".");
    s.visit(sub);
    rows.insert(rows.end(), sub.rows.begin(), sub.rows.end());
  }

  template <class T, class... Opts>
  void node(T&, std::string_view key, std::string_view doc, const Opts&...) {
    constexpr bool required = (std::is_same_v<Opts, Required> || ...);
    rows.push_back({prefix_ + std::string(key), std::string(NodeTraits<T>::type_name),
                    required ? "required" : "(empty)", "", std::string(doc)});
  }

  std::vector<ReferenceRow> rows;

 private:
  template <class T>
  static std::string type_of() {
    if constexpr (std::is_enum_v<T>) {
      std::string s = "one of: ";
      const auto names = enum_names<T>();
      for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
      return s;
    } else {
      return std::string(ValueTraits<T>::type_name);
    }
  }
  std::string prefix_;
};

template <class S>
std::vector<ReferenceRow> reference_rows() {
  S s = defaults<S>();
  ReferenceWriter w;
  s.visit(w);
  return std::move(w.rows);
}

// `rows` without the rows inside section `key` (its own row kept, with `doc` as
// its description): for a section whose keys another table documents, so that
// each key is listed once (a machine's `kernels`, the kernel profile's keys).
std::vector<ReferenceRow> fold_section(std::vector<ReferenceRow> rows, std::string_view key,
                                       std::string_view doc);

// One Markdown table for a spec kind.
std::string reference_markdown(std::string_view title, std::string_view intro,
                               const std::vector<ReferenceRow>& rows);

}  // namespace tdmsim::config
