#include "workloads/config/units.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace tdmsim::units {
namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang extension, for overflow-free scaling

struct Unit {
  std::string_view suffix;
  std::uint64_t multiplier;  // in base units
  bool decimal;              // power of ten (exactly printable with a fraction)
};

constexpr std::uint64_t k10(int e) {
  std::uint64_t v = 1;
  for (int i = 0; i < e; ++i) v *= 10;
  return v;
}

constexpr Unit kFrequencyUnits[] = {
    {"Hz", 1, true}, {"kHz", k10(3), true}, {"MHz", k10(6), true}, {"GHz", k10(9), true}};

constexpr Unit kSizeUnits[] = {
    {"B", 1, true},          {"KB", k10(3), true},      {"MB", k10(6), true},
    {"GB", k10(9), true},    {"TB", k10(12), true},     {"PB", k10(15), true},
    {"EB", k10(18), true},   {"KiB", 1ull << 10, false}, {"MiB", 1ull << 20, false},
    {"GiB", 1ull << 30, false}, {"TiB", 1ull << 40, false}, {"PiB", 1ull << 50, false},
    {"EiB", 1ull << 60, false}};

constexpr Unit kBandwidthUnits[] = {
    {"B/s", 1, true},          {"KB/s", k10(3), true},       {"MB/s", k10(6), true},
    {"GB/s", k10(9), true},    {"TB/s", k10(12), true},      {"PB/s", k10(15), true},
    {"KiB/s", 1ull << 10, false}, {"MiB/s", 1ull << 20, false}, {"GiB/s", 1ull << 30, false},
    {"TiB/s", 1ull << 40, false}};

constexpr Unit kTimeUnits[] = {
    {"ps", 1, true}, {"ns", k10(3), true}, {"us", k10(6), true}, {"ms", k10(9), true},
    {"s", k10(12), true}};

std::span<const Unit> units_of(Quantity q) {
  switch (q) {
    case Quantity::frequency: return kFrequencyUnits;
    case Quantity::size: return kSizeUnits;
    case Quantity::bandwidth: return kBandwidthUnits;
    case Quantity::time: return kTimeUnits;
  }
  return {};
}

std::string_view quantity_name(Quantity q) {
  switch (q) {
    case Quantity::frequency: return "frequency";
    case Quantity::size: return "size";
    case Quantity::bandwidth: return "bandwidth";
    case Quantity::time: return "time";
  }
  return "quantity";
}

std::string_view base_noun(Quantity q) {
  switch (q) {
    case Quantity::frequency: return "hertz";
    case Quantity::size: return "bytes";
    case Quantity::bandwidth: return "bytes per second";
    case Quantity::time: return "picoseconds";
  }
  return "units";
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Parses "<decimal number><optional spaces><unit>" exactly into base units.
Parsed<std::uint64_t> parse_quantity(std::string_view text, Quantity q) {
  const std::string expected = "expected a " + std::string(quantity_name(q)) +
                               " such as " +
                               std::string(q == Quantity::frequency   ? "'2100MHz'"
                                           : q == Quantity::size      ? "'64KiB'"
                                           : q == Quantity::bandwidth ? "'5.3TB/s'"
                                                                      : "'1.5us'") +
                               " (units: " + accepted_units(q) + ")";
  Parsed<std::uint64_t> out;
  std::string_view s = trim(text);
  if (s.empty()) {
    out.error = expected + ", got an empty value";
    return out;
  }
  if (s.front() == '-') {
    out.error = "must not be negative, got '" + std::string(s) + "'";
    return out;
  }
  if (s.front() == '+') s.remove_prefix(1);
  std::size_t i = 0;
  u128 mantissa = 0;
  int frac_digits = 0;
  int digits = 0;
  bool seen_dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    if (++digits > 30) {
      out.error = "number '" + std::string(s) + "' has too many digits";
      return out;
    }
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (seen_dot) ++frac_digits;
  }
  if (digits == 0) {
    out.error = expected + ", got '" + std::string(s) + "'";
    return out;
  }
  const std::string_view suffix = trim(s.substr(i));
  if (suffix.empty()) {
    out.error = "missing unit: " + expected + ", got '" + std::string(s) + "'";
    return out;
  }
  const Unit* unit = nullptr;
  for (const Unit& u : units_of(q)) {
    if (u.suffix == suffix) unit = &u;
  }
  if (unit == nullptr) {
    std::string hint;
    for (const Unit& u : units_of(q)) {
      if (iequals(u.suffix, suffix)) hint = " (did you mean '" + std::string(u.suffix) + "'?)";
    }
    // The micro sign (U+00B5) or Greek mu (U+03BC): units are ASCII.
    if (q == Quantity::time && (suffix == "\xC2\xB5s" || suffix == "\xCE\xBCs")) hint = " (did you mean 'us'?)";
    out.error = "unknown " + std::string(quantity_name(q)) + " unit '" + std::string(suffix) +
                "'" + hint + ": " + expected;
    return out;
  }
  u128 scaled = mantissa * unit->multiplier;  // < 1e30 * 2^60 fits in 128 bits
  u128 divisor = 1;
  for (int d = 0; d < frac_digits; ++d) divisor *= 10;
  if (scaled % divisor != 0) {
    out.error = "'" + std::string(s) + "' is not a whole number of " +
                std::string(base_noun(q));
    return out;
  }
  scaled /= divisor;
  if (scaled > std::numeric_limits<std::uint64_t>::max()) {
    out.error = "'" + std::string(s) + "' overflows a 64-bit count of " +
                std::string(base_noun(q));
    return out;
  }
  out.value = static_cast<std::uint64_t>(scaled);
  return out;
}

// Exact decimal text of value/multiplier for a power-of-ten multiplier.
std::string exact_decimal(std::uint64_t value, std::uint64_t multiplier) {
  std::string text = std::to_string(value / multiplier);
  std::uint64_t rest = value % multiplier;
  if (rest != 0) {
    std::string frac = std::to_string(rest);
    std::string pad;
    for (std::uint64_t m = multiplier / 10; m > rest && m > 0; m /= 10) pad += '0';
    frac = pad + frac;
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    text += "." + frac;
  }
  return text;
}

// Shortest exact rendering over all units (ties go to the larger unit), except
// that a small whole number of a binary unit wins: 3000KiB, not 3072KB.
std::string format_quantity(std::uint64_t value, Quantity q) {
  const auto units = units_of(q);
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    const Unit& u = *it;
    if (!u.decimal && value >= u.multiplier && value % u.multiplier == 0 &&
        value / u.multiplier < 10000) {
      return std::to_string(value / u.multiplier) + std::string(u.suffix);
    }
  }
  std::string best = std::to_string(value) + std::string(units.front().suffix);
  std::uint64_t best_mult = 1;
  for (const Unit& u : units) {
    if (value < u.multiplier) continue;
    std::optional<std::string> mant;
    if (value % u.multiplier == 0) {
      mant = std::to_string(value / u.multiplier);
    } else if (u.decimal) {
      mant = exact_decimal(value, u.multiplier);
    }
    if (!mant) continue;
    std::string text = *mant + std::string(u.suffix);
    if (text.size() < best.size() || (text.size() == best.size() && u.multiplier > best_mult)) {
      best = std::move(text);
      best_mult = u.multiplier;
    }
  }
  return best;
}

template <class T, class Make>
Parsed<T> wrap(Parsed<std::uint64_t> p, Make make) {
  Parsed<T> out;
  out.error = std::move(p.error);
  if (out.error.empty()) out.value = make(p.value);
  return out;
}

}  // namespace

std::string accepted_units(Quantity q) {
  std::string list;
  for (const Unit& u : units_of(q)) {
    if (!list.empty()) list += ", ";
    list += u.suffix;
  }
  return list;
}

Parsed<Frequency> parse_frequency(std::string_view text) {
  return wrap<Frequency>(parse_quantity(text, Quantity::frequency),
                         [](std::uint64_t v) { return Frequency{v}; });
}
Parsed<Bytes> parse_bytes(std::string_view text) {
  return wrap<Bytes>(parse_quantity(text, Quantity::size),
                     [](std::uint64_t v) { return Bytes{v}; });
}
Parsed<Bytes> parse_byte_count(std::string_view text) {
  // As parse_bytes reads a number with a unit: spaces around it and a '+' sign allowed.
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  Parsed<Bytes> p;
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), p.value.bytes);
    if (ec != std::errc{} || end != t.data() + t.size()) {
      return {Bytes{}, "'" + std::string(t) + "' is too large a number of bytes"};
    }
  } else {
    p = parse_bytes(text);
  }
  // A size of nothing: no command sizes a buffer, a message or a footprint so.
  if (p && p.value.bytes == 0) p.error = "must be above 0 bytes";
  return p;
}
Parsed<Bandwidth> parse_bandwidth(std::string_view text) {
  return wrap<Bandwidth>(parse_quantity(text, Quantity::bandwidth),
                         [](std::uint64_t v) { return Bandwidth{v}; });
}
Parsed<Duration> parse_duration(std::string_view text) {
  return wrap<Duration>(parse_quantity(text, Quantity::time),
                        [](std::uint64_t v) { return Duration{v}; });
}

std::string format(Frequency f) { return format_quantity(f.hz, Quantity::frequency); }
std::string format(Bytes b) { return format_quantity(b.bytes, Quantity::size); }
std::string format(Bandwidth b) { return format_quantity(b.bytes_per_s, Quantity::bandwidth); }
std::string format(Duration d) { return format_quantity(d.ps, Quantity::time); }

std::string plain_decimal(double v, int significant) {
  if (v == 0 || !std::isfinite(v)) return "0";
  // Digits after the point that keep `significant` digits of this magnitude.
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::max(0, significant - 1 - magnitude);
  char buf[512];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  if (ec != std::errc{}) return "0";
  std::string t(buf, end);
  if (t.find('.') != std::string::npos) {
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
  }
  if (t == "-0") t = "0";
  return t;
}

}  // namespace tdmsim::units
