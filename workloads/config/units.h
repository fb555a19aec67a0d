// Physical quantities used by every configuration file: frequencies, sizes,
// bandwidths and times. Each is stored as an exact integer in its base unit
// (Hz, bytes, bytes/s, picoseconds) so that parsing "2.1GHz" or "5.3TB/s" is
// exact and results are bit-identical across runs and machines.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace tdmsim::units {

// Frequency in hertz.
struct Frequency {
  std::uint64_t hz = 0;
  auto operator<=>(const Frequency&) const = default;
  double ghz() const { return static_cast<double>(hz) * 1e-9; }
  double period_ps() const { return 1e12 / static_cast<double>(hz); }
};

// Size in bytes. KB/MB/GB/TB are decimal (1e3...), KiB/MiB/GiB/TiB binary (1024...).
struct Bytes {
  std::uint64_t bytes = 0;
  auto operator<=>(const Bytes&) const = default;
};

// Bandwidth in bytes per second (decimal units, as datasheets quote them).
struct Bandwidth {
  std::uint64_t bytes_per_s = 0;
  auto operator<=>(const Bandwidth&) const = default;
  double tb_per_s() const { return static_cast<double>(bytes_per_s) * 1e-12; }
};

// Time interval in picoseconds (SystemC's default time resolution).
struct Duration {
  std::uint64_t ps = 0;
  auto operator<=>(const Duration&) const = default;
  double ns() const { return static_cast<double>(ps) * 1e-3; }
  double us() const { return static_cast<double>(ps) * 1e-6; }
};

// The kind of a quantity, used for messages and the generated reference.
enum class Quantity { frequency, size, bandwidth, time };

// Result of parsing: either a value or a human-readable reason (never throws).
template <class T>
struct Parsed {
  T value{};
  std::string error;  // empty on success
  explicit operator bool() const { return error.empty(); }
};

Parsed<Frequency> parse_frequency(std::string_view text);
Parsed<Bytes> parse_bytes(std::string_view text);
Parsed<Bandwidth> parse_bandwidth(std::string_view text);
Parsed<Duration> parse_duration(std::string_view text);

// A size as command-line options take it: with a unit ("64MiB", "1GB"), or a
// plain whole number of bytes ("1048576", as nccl-tests take sizes), above 0.
// YAML values keep their units (parse_bytes).
Parsed<Bytes> parse_byte_count(std::string_view text);

// Canonical text that parses back to exactly the same value, e.g. "2100MHz",
// "64KiB", "192GB", "5.3TB/s", "1.5us".
std::string format(Frequency f);
std::string format(Bytes b);
std::string format(Bandwidth b);
std::string format(Duration d);

// The unit suffixes accepted for a quantity, for messages: "Hz, kHz, MHz, GHz".
std::string accepted_units(Quantity q);

// `v` as a plain decimal with no exponent and no trailing zeros: its fraction
// rounded to keep `significant` significant digits ("6e-05" -> "0.00006",
// 1.2000000000000002 -> "1.2" at 12 digits), a value at or above
// 10^significant written whole (1e15 -> "1000000000000000"): a number a unit
// can follow, as the parsers read it. Finite values only.
std::string plain_decimal(double v, int significant);

}  // namespace tdmsim::units
