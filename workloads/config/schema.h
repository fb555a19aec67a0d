// The parameter declaration mechanism. Every configuration struct declares
// each of its parameters exactly once, in a `visit` member template:
//
//   template <class V> void visit(V& v) {
//     v.param(stacks, "stacks", "HBM stacks in the package", Default{8u}, Min{1u}, Max{64u});
//     v.section(hbm, "hbm", "HBM stacks and channels");
//   }
//
// That one declaration (key, type from the member, unit from the type, default,
// range, description) drives parsing and validation (reader.h), defaults
// (Defaults below), output of the resolved config (writer.h) and the generated
// YAML reference (reference.h).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "workloads/config/units.h"

// Only the reader and writer need yaml-cpp itself; specs include this header.
namespace YAML {
class Node;
}

namespace tdmsim::config {

// ---- options attached to a parameter declaration ----------------------------

template <class T>
struct Default {
  T value;
};
template <class T>
Default(T) -> Default<T>;

struct Required {};

// A string parameter whose empty value means something its doc says (a sweep
// axis's "" for "no table"); every other string parameter refuses "", which
// would silently read as the key left out.
struct EmptyAllowed {};

template <class T>
struct Min {
  T value;
};
template <class T>
Min(T) -> Min<T>;

template <class T>
struct Max {
  T value;
};
template <class T>
Max(T) -> Max<T>;

// ---- enums ------------------------------------------------------------------

// Specialise for every enum used in configuration:
//   template <> struct EnumTraits<Scoring> {
//     static constexpr std::array<std::pair<Scoring, std::string_view>, 2> names{...};
//   };
template <class E>
struct EnumTraits;

template <class E>
std::string_view enum_name(E e) {
  for (const auto& [value, name] : EnumTraits<E>::names) {
    if (value == e) return name;
  }
  return "?";
}

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& [value, name] : EnumTraits<E>::names) out.emplace_back(name);
  return out;
}

template <class E>
std::optional<E> enum_from_name(std::string_view text) {
  for (const auto& [value, name] : EnumTraits<E>::names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

// ---- scalar value codecs ------------------------------------------------------

// ValueTraits<T> says how one scalar parameter is read from YAML text and
// written back: type_name (for the reference), parse (text -> value or a
// reason) and text (value -> canonical text that parses back identically).
template <class T, class = void>
struct ValueTraits;

std::string scalar_text(const YAML::Node& node);  // the scalar's text as written

units::Parsed<bool> parse_bool(std::string_view text);
units::Parsed<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max);
units::Parsed<double> parse_real(std::string_view text);
std::string format_real(double v);  // shortest text that parses back exactly

template <>
struct ValueTraits<bool> {
  static constexpr std::string_view type_name = "boolean";
  static units::Parsed<bool> parse(std::string_view t) { return parse_bool(t); }
  static std::string text(bool v) { return v ? "true" : "false"; }
};

template <class T>
struct ValueTraits<T, std::enable_if_t<std::is_integral_v<T> && std::is_unsigned_v<T> &&
                                       !std::is_same_v<T, bool>>> {
  static constexpr std::string_view type_name = "integer";
  static units::Parsed<T> parse(std::string_view t) {
    auto p = parse_unsigned(t, static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
    return {static_cast<T>(p.value), p.error};
  }
  static std::string text(T v) { return std::to_string(v); }
};

template <>
struct ValueTraits<double> {
  static constexpr std::string_view type_name = "number";
  static units::Parsed<double> parse(std::string_view t) { return parse_real(t); }
  static std::string text(double v) { return format_real(v); }
};

template <>
struct ValueTraits<std::string> {
  static constexpr std::string_view type_name = "string";
  static units::Parsed<std::string> parse(std::string_view t) { return {std::string(t), {}}; }
  static std::string text(const std::string& v) { return v; }
};

template <>
struct ValueTraits<units::Frequency> {
  static constexpr std::string_view type_name = "frequency (Hz, kHz, MHz, GHz)";
  static units::Parsed<units::Frequency> parse(std::string_view t) {
    return units::parse_frequency(t);
  }
  static std::string text(units::Frequency v) { return units::format(v); }
};

template <>
struct ValueTraits<units::Bytes> {
  static constexpr std::string_view type_name = "size (B, KB, MB, GB, KiB, MiB, GiB, ...)";
  static units::Parsed<units::Bytes> parse(std::string_view t) { return units::parse_bytes(t); }
  static std::string text(units::Bytes v) { return units::format(v); }
};

template <>
struct ValueTraits<units::Bandwidth> {
  static constexpr std::string_view type_name = "bandwidth (GB/s, TB/s, GiB/s, ...)";
  static units::Parsed<units::Bandwidth> parse(std::string_view t) {
    return units::parse_bandwidth(t);
  }
  static std::string text(units::Bandwidth v) { return units::format(v); }
};

template <>
struct ValueTraits<units::Duration> {
  static constexpr std::string_view type_name = "time (ps, ns, us, ms, s)";
  static units::Parsed<units::Duration> parse(std::string_view t) {
    return units::parse_duration(t);
  }
  static std::string text(units::Duration v) { return units::format(v); }
};

std::string one_of_message(const std::vector<std::string>& names, std::string_view got);

template <class E>
struct ValueTraits<E, std::enable_if_t<std::is_enum_v<E>>> {
  static constexpr std::string_view type_name = "enum";
  static units::Parsed<E> parse(std::string_view t) {
    if (auto e = enum_from_name<E>(t)) return {*e, {}};
    return {E{}, one_of_message(enum_names<E>(), t)};
  }
  static std::string text(E v) { return std::string(enum_name(v)); }
};

// Whether T is a std::vector of scalars (read from a YAML sequence).
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

// ---- the metadata of one declared parameter ------------------------------------

template <class T>
struct ParamMeta {
  std::optional<T> def;
  bool required = false;
  std::optional<T> min;
  std::optional<T> max;
  bool empty_allowed = false;  // strings: EmptyAllowed
  bool list_entry = false;     // an entry of a list, which cannot be left out (messages say so)
};

namespace detail {
// Converts an option's value to the parameter's type. Strings are parsed with
// the type's own codec so unit defaults read naturally: Default{"5us"}.
template <class T, class U>
T convert_option(const U& u) {
  if constexpr (std::is_convertible_v<U, std::string_view> && !std::is_same_v<T, std::string>) {
    auto p = ValueTraits<T>::parse(std::string_view(u));
    if (!p) throw std::logic_error("bad schema literal '" + std::string(u) + "': " + p.error);
    return p.value;
  } else {
    return static_cast<T>(u);
  }
}
template <class T, class U>
void apply_option(ParamMeta<T>& m, const Default<U>& o) {
  m.def = convert_option<T>(o.value);
}
template <class T>
void apply_option(ParamMeta<T>& m, Required) {
  m.required = true;
}
template <class T>
void apply_option(ParamMeta<T>& m, EmptyAllowed) {
  m.empty_allowed = true;
}
template <class T, class U>
void apply_option(ParamMeta<T>& m, const Min<U>& o) {
  m.min = convert_option<T>(o.value);
}
template <class T, class U>
void apply_option(ParamMeta<T>& m, const Max<U>& o) {
  m.max = convert_option<T>(o.value);
}
}  // namespace detail

template <class T, class... Opts>
ParamMeta<T> make_meta(const Opts&... opts) {
  ParamMeta<T> m;
  (detail::apply_option(m, opts), ...);
  return m;
}

// Range check; returns "" if the value is acceptable.
template <class T>
std::string check_range(const ParamMeta<T>& m, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (v.empty() && !m.empty_allowed) {
      return m.required || m.list_entry ? "expected a non-empty string"
                                        : "expected a non-empty string; leave the key out (or ~) for none";
    }
  }
  if constexpr (requires(const T& a, const T& b) { a < b; }) {
    if (m.min && v < *m.min) {
      return "must be at least " + ValueTraits<T>::text(*m.min) + ", got " +
             ValueTraits<T>::text(v);
    }
    if (m.max && *m.max < v) {
      return "must be at most " + ValueTraits<T>::text(*m.max) + ", got " +
             ValueTraits<T>::text(v);
    }
  }
  return {};
}

// A parameter whose YAML shape is not a scalar or a plain section (e.g. a sweep's
// `axes:` mapping) provides NodeTraits<T>: type_name, a whole-node reader
// (see reader.h) and to_json (see writer.h). Visitors handle it through
// `v.node(member, key, doc, Required{})`.
template <class T>
struct NodeTraits;

// ---- Defaults: sets every parameter that declares a default ----------------------

class Defaults {
 public:
  template <class T, class... Opts>
  void param(T& member, std::string_view, std::string_view, const Opts&... opts) {
    if constexpr (IsVector<T>::value) {
      member = {};
      (void)sizeof...(opts);
    } else {
      auto meta = make_meta<T>(opts...);
      member = meta.def ? *meta.def : T{};
    }
  }
  template <class S>
  void section(S& member, std::string_view, std::string_view) {
    member.visit(*this);
  }
  template <class S>
  void section(std::optional<S>& member, std::string_view, std::string_view) {
    member.reset();
  }
  template <class T, class... Opts>
  void node(T& member, std::string_view, std::string_view, const Opts&...) {
    member = T{};
  }
};

// A spec with every default applied; the only way specs should be created.
template <class S>
S defaults() {
  S s{};
  Defaults d;
  s.visit(d);
  return s;
}

// ---- KeyLister: every parameter's dotted key path --------------------------------

class KeyLister {
 public:
  explicit KeyLister(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  template <class T, class... Opts>
  void param(T&, std::string_view key, std::string_view, const Opts&...) {
    keys.push_back(prefix_ + std::string(key));
  }
  template <class S>
  void section(S& member, std::string_view key, std::string_view) {
    KeyLister sub(prefix_ + std::string(key) + ".");
    member.visit(sub);
    keys.insert(keys.end(), sub.keys.begin(), sub.keys.end());
  }
  template <class S>
  void section(std::optional<S>&, std::string_view key, std::string_view) {
    S s = defaults<S>();
    section(s, key, {});
  }
  template <class T, class... Opts>
  void node(T&, std::string_view key, std::string_view, const Opts&...) {
    keys.push_back(prefix_ + std::string(key));
  }
  std::vector<std::string> keys;

 private:
  std::string prefix_;
};

template <class S>
std::vector<std::string> all_keys() {
  S s = defaults<S>();
  KeyLister l;
  s.visit(l);
  return l.keys;
}

}  // namespace tdmsim::config
