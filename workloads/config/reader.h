// Reads a YAML mapping into a spec through the spec's parameter declarations
// (schema.h). Reading is layered: a `base:` file is read first, then each
// overlay writes only the keys it names, so `set_at` remembers where every key
// got its final value (for later cross-field messages and the resolved config).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include "workloads/config/diagnostics.h"
#include "workloads/config/schema.h"

namespace tdmsim::config {

struct ReadContext {
  std::string file;
  Diagnostics* diags = nullptr;
  SetMap* set_at = nullptr;
};

Location location_of(const std::string& file, const YAML::Node& node);
std::string node_kind(const YAML::Node& node);  // "a mapping", "a sequence", ...
// Why a mapping's key node is not a key name ("" when it is one: a scalar not
// tagged null). `~: 1`, `null: 1` and `? [a, b]` are keys YAML allows and no
// tdmsim file has.
std::string key_name_problem(const YAML::Node& key);

class Reader {
 public:
  // `reserved`: keys handled by the caller (e.g. `base`, `kind`) and so not unknown.
  Reader(const YAML::Node& map, std::string prefix, ReadContext& ctx,
         std::vector<std::string> reserved = {});

  template <class T, class... Opts>
  void param(T& member, std::string_view key, std::string_view, const Opts&... opts) {
    const YAML::Node child = lookup(key);
    if (!child.IsDefined()) return;
    const std::string path = prefix_ + std::string(key);
    if constexpr (IsVector<T>::value) {
      using E = typename T::value_type;
      if (!child.IsSequence()) {
        error(child, path, "expected a list of " + std::string(ValueTraits<E>::type_name) +
                               " values, got " + node_kind(child));
        return;
      }
      T values;
      bool ok = true;
      erase_below(path + "[");  // element locations of a base's list
      ParamMeta<E> item_meta;
      item_meta.list_entry = true;
      for (std::size_t i = 0; i < child.size(); ++i) {
        E v{};
        const std::string item = path + "[" + std::to_string(i) + "]";
        ok &= read_scalar(child[i], item, item_meta, v);
        (*ctx_.set_at)[item] = location_of(ctx_.file, child[i]);
        values.push_back(std::move(v));
      }
      if (ok) commit(member, std::move(values), child, path);
    } else {
      T v{};
      const ParamMeta<T> meta = make_meta<T>(opts...);
      if constexpr (std::is_same_v<T, std::string>) {
        // `~` unsets an optional string key (an overlay clearing its base's file,
        // as `~` removes an optional section); `config show` writes it so.
        if (child.IsNull() && !meta.required) {
          commit(member, std::string(), child, path);
          return;
        }
      }
      if (read_scalar(child, path, meta, v)) commit(member, std::move(v), child, path);
    }
  }

  template <class S>
  void section(S& member, std::string_view key, std::string_view) {
    const YAML::Node child = lookup(key);
    if (!child.IsDefined()) return;
    const std::string path = prefix_ + std::string(key);
    if (!child.IsMap()) {
      error(child, path, "expected a mapping of keys, got " + node_kind(child));
      return;
    }
    (*ctx_.set_at)[path] = location_of(ctx_.file, child);
    Reader sub(child, path + ".", ctx_);
    member.visit(sub);
    sub.finish();
  }

  // An optional section: absent keeps what a base file said, `~` removes it,
  // a mapping creates it (from defaults) or overlays it.
  template <class S>
  void section(std::optional<S>& member, std::string_view key, std::string_view doc) {
    const YAML::Node child = lookup(key);
    if (!child.IsDefined()) return;
    const std::string path = prefix_ + std::string(key);
    if (child.IsNull()) {
      member.reset();
      erase_below(path);
      return;
    }
    if (!member && child.IsMap()) member = defaults<S>();
    if (member) section(*member, key, doc);
    else error(child, path, "expected a mapping of keys or ~, got " + node_kind(child));
  }

  template <class T, class... Opts>
  void node(T& member, std::string_view key, std::string_view, const Opts&...) {
    const YAML::Node child = lookup(key);
    if (!child.IsDefined()) return;
    const std::string path = prefix_ + std::string(key);
    T value{};
    if (NodeTraits<T>::read(child, path, ctx_, value)) commit(member, std::move(value), child, path);
  }

  // Reports keys present in the mapping that no declaration consumed.
  void finish();

 private:
  YAML::Node lookup(std::string_view key);
  void error(const YAML::Node& at, const std::string& path, std::string message);
  void erase_below(const std::string& path);

  template <class T>
  bool read_scalar(const YAML::Node& node, const std::string& path, const ParamMeta<T>& meta,
                   T& out) {
    if (!node.IsScalar()) {
      error(node, path,
            std::string(ValueTraits<T>::type_name.starts_with('i') || ValueTraits<T>::type_name.starts_with('e')
                            ? "expected an "
                            : "expected a ") +
                std::string(ValueTraits<T>::type_name) + ", got " + node_kind(node));
      return false;
    }
    // YAML reads a quoted scalar ("4") or one tagged !!str as text: a key
    // whose type is a number or a boolean does not take it as one.
    if constexpr (ValueTraits<T>::type_name == "integer" || ValueTraits<T>::type_name == "number" ||
                  ValueTraits<T>::type_name == "boolean") {
      if (const std::string& tag = node.Tag(); tag == "!" || tag.ends_with(":str")) {
        error(node, path,
              std::string(ValueTraits<T>::type_name == "integer" ? "expected an " : "expected a ") +
                  std::string(ValueTraits<T>::type_name) + ", got the string '" + std::string(scalar_text(node)) +
                  "' (YAML reads a quoted or !!str value as text: write it without quotes)");
        return false;
      }
    }
    auto parsed = ValueTraits<T>::parse(scalar_text(node));
    if (!parsed) {
      // A number beyond the type's range is beyond the key's too: said with
      // the key's own bound, as a value just above it is.
      if constexpr (requires(const T& a, const T& b) { a < b; }) {
        if (meta.max && parsed.error.find("is too large") != std::string::npos) {
          error(node, path, "must be at most " + ValueTraits<T>::text(*meta.max) + ", got '" + std::string(scalar_text(node)) + "'");
          return false;
        }
      }
      error(node, path, parsed.error);
      return false;
    }
    if (auto why = check_range(meta, parsed.value); !why.empty()) {
      error(node, path, why);
      return false;
    }
    out = std::move(parsed.value);
    return true;
  }

  template <class T>
  void commit(T& member, T&& value, const YAML::Node& node, const std::string& path) {
    member = std::move(value);
    (*ctx_.set_at)[path] = location_of(ctx_.file, node);
  }

  YAML::Node map_;
  std::string prefix_;
  ReadContext& ctx_;
  std::vector<std::string> known_;
  std::vector<std::string> reserved_;
};

// Reports required parameters that no layer set.
class RequiredChecker {
 public:
  RequiredChecker(std::string prefix, const SetMap& set_at, Location fallback, Diagnostics& d)
      : prefix_(std::move(prefix)), set_at_(set_at), fallback_(std::move(fallback)), diags_(d) {}

  template <class T, class... Opts>
  void param(T&, std::string_view key, std::string_view doc, const Opts&... opts) {
    const std::string path = prefix_ + std::string(key);
    bool required = false;
    if constexpr (!IsVector<T>::value) required = make_meta<T>(opts...).required;
    if (required && !set_at_.contains(path)) {
      diags_.add(nearest_location(set_at_, path, fallback_), path,
                 "missing required key '" + std::string(key) + "' (" + std::string(doc) + ")");
    }
  }
  template <class T, class... Opts>
  void node(T&, std::string_view key, std::string_view doc, const Opts&...) {
    const std::string path = prefix_ + std::string(key);
    constexpr bool required = (std::is_same_v<Opts, Required> || ...);
    if (required && !set_at_.contains(path)) {
      diags_.add(nearest_location(set_at_, path, fallback_), path,
                 "missing required key '" + std::string(key) + "' (" + std::string(doc) + ")");
    }
  }
  template <class S>
  void section(S& member, std::string_view key, std::string_view) {
    RequiredChecker sub(prefix_ + std::string(key) + ".", set_at_, fallback_, diags_);
    member.visit(sub);
  }
  template <class S>
  void section(std::optional<S>& member, std::string_view key, std::string_view doc) {
    if (member) section(*member, key, doc);
  }

 private:
  std::string prefix_;
  const SetMap& set_at_;
  Location fallback_;
  Diagnostics& diags_;
};

// Cross-field checks after all layers are read: `fail("moe.top_k", "...")`
// reports at the place that key got its value.
class Checker {
 public:
  // `chain`: the files read, the one named first and then its bases (display
  // paths); empty where the spec came from one file or none.
  Checker(const SetMap& set_at, Location fallback, Diagnostics& d, std::vector<std::string> chain = {})
      : set_at_(set_at), fallback_(std::move(fallback)), diags_(d), chain_(std::move(chain)) {}
  // Reports at the line where `path` was set; if it kept its default, at the
  // first of `related` that a file set (the key that makes `path` wrong).
  // Where an overlay set a related key and a base `path`, at the overlay's
  // line: the value that made the pair wrong. The error then names that
  // key, and `path` with where the base set it, before the message, so that
  // the key named is the one on the line shown ("FILE:9:21:
  // tdm.dispatch_latency: tdm.slot_length (BASE:40:3): is shorter than
  // ..."). A `path` left at its default is named as the key to set.
  void fail(const std::string& path, std::string message,
            std::initializer_list<std::string_view> related = {}) {
    const auto own = set_at_.find(path);
    const bool set = own != set_at_.end();
    Location where = set ? own->second : nearest_location(set_at_, path, fallback_);
    bool found = set;
    std::size_t best = set ? place(own->second.file) : 0;
    std::string_view key = path;
    for (auto r : related) {
      const auto it = set_at_.find(std::string(r));
      if (it == set_at_.end()) continue;
      const std::size_t at = place(it->second.file);
      if (!found || at < best) {
        where = it->second;
        best = at;
        found = true;
        key = r;
      }
    }
    if (key != path && set) {
      message = fmt::format("{} ({}:{}:{}): {}", path, own->second.file, own->second.line, own->second.column,
                            message);
    } else {
      key = path;  // left at its default: named as the key to set
    }
    diags_.add(where, std::string(key), std::move(message));
  }
  // Reports at `where` (a place inside a key's value, a list entry's).
  void fail_at(const Location& where, const std::string& key, std::string message) {
    diags_.add(where, key, std::move(message));
  }
  // A name or description goes into report headers, CSV rows and file
  // names: one line of text, without control characters (a newline, a tab).
  void one_line(const std::string& path, const std::string& value) {
    for (const char ch : value) {
      const auto u = static_cast<unsigned char>(ch);
      if (u < 0x20 || u == 0x7f) {
        fail(path, u == '\n' ? std::string("must be one line of text; it holds a line break (a block scalar, > or |, "
                                            "keeps its last one: write >- or |-)")
                              : fmt::format("must be one line of text without control characters; it holds 0x{:02x}", u));
        return;
      }
    }
  }
  const Location& fallback() const { return fallback_; }
  // A file's place in the chain (0: the file named, then its bases); past its
  // end if unknown.
  std::size_t place(const std::string& file) const {
    return static_cast<std::size_t>(std::find(chain_.begin(), chain_.end(), file) - chain_.begin());
  }
  // Whether a file set `path` (rather than it keeping its default).
  bool is_set(const std::string& path) const { return set_at_.contains(path); }
  // Where a file set `path`; null where it kept its default.
  const Location* set_where(const std::string& path) const {
    const auto it = set_at_.find(path);
    return it == set_at_.end() ? nullptr : &it->second;
  }

 private:
  const SetMap& set_at_;
  Location fallback_;
  Diagnostics& diags_;
  std::vector<std::string> chain_;
};

}  // namespace tdmsim::config
