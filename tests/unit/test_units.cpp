// Quantities with units: exact parsing, clear errors and exact round trips.
#include <catch2/catch.hpp>

#include <random>

#include "workloads/config/units.h"

using namespace tdmsim::units;

TEST_CASE("frequencies parse exactly in every accepted unit", "[units]") {
  CHECK(parse_frequency("2100MHz").value.hz == 2'100'000'000ull);
  CHECK(parse_frequency("2.1GHz").value.hz == 2'100'000'000ull);
  CHECK(parse_frequency("2.1 GHz").value.hz == 2'100'000'000ull);
  CHECK(parse_frequency("1980MHz").value.hz == 1'980'000'000ull);
  CHECK(parse_frequency("100kHz").value.hz == 100'000ull);
  CHECK(parse_frequency("7Hz").value.hz == 7ull);
}

TEST_CASE("sizes distinguish decimal and binary prefixes", "[units]") {
  CHECK(parse_bytes("64KiB").value.bytes == 65536ull);
  CHECK(parse_bytes("256MiB").value.bytes == 268435456ull);
  CHECK(parse_bytes("192GB").value.bytes == 192'000'000'000ull);
  CHECK(parse_bytes("1.5KiB").value.bytes == 1536ull);
  CHECK(parse_bytes("0B").value.bytes == 0ull);
  CHECK(parse_bytes("15EiB").value.bytes == 15ull << 60);
}

TEST_CASE("command-line sizes: a unit, or a plain whole number of bytes", "[units]") {
  CHECK(parse_byte_count("1048576").value.bytes == 1048576ull);
  CHECK(parse_byte_count("64MiB").value.bytes == 64ull << 20);
  CHECK(parse_byte_count("18446744073709551615").value.bytes == UINT64_MAX);
  CHECK_THAT(parse_byte_count("18446744073709551616").error, Catch::Contains("too large"));
  CHECK_FALSE(parse_byte_count("12XB"));
  CHECK_FALSE(parse_byte_count(""));
  CHECK(parse_byte_count(" +4096 ").value.bytes == 4096ull);  // as " +4KiB" reads with a unit
  CHECK(parse_byte_count("0").error == "must be above 0 bytes");
  CHECK(parse_byte_count("0KiB").error == "must be above 0 bytes");
  CHECK_FALSE(parse_bytes("1048576"));  // YAML values keep their units
}

TEST_CASE("bandwidths and times parse exactly", "[units]") {
  CHECK(parse_bandwidth("5.3TB/s").value.bytes_per_s == 5'300'000'000'000ull);
  CHECK(parse_bandwidth("17TB/s").value.bytes_per_s == 17'000'000'000'000ull);
  CHECK(parse_bandwidth("900GB/s").value.bytes_per_s == 900'000'000'000ull);
  CHECK(parse_duration("1.5us").value.ps == 1'500'000ull);
  CHECK(parse_duration("120ns").value.ps == 120'000ull);
  CHECK(parse_duration("2ms").value.ps == 2'000'000'000ull);
}

TEST_CASE("missing, wrong and unknown units are errors that say what was expected", "[units]") {
  auto p = parse_frequency("2100");
  REQUIRE_FALSE(p);
  CHECK_THAT(p.error, Catch::Contains("missing unit") && Catch::Contains("MHz"));

  p = parse_frequency("2100MB");
  REQUIRE_FALSE(p);
  CHECK_THAT(p.error, Catch::Contains("unknown frequency unit 'MB'"));

  p = parse_frequency("2100mhz");
  REQUIRE_FALSE(p);
  CHECK_THAT(p.error, Catch::Contains("did you mean 'MHz'"));

  auto b = parse_bytes("64 kb");
  REQUIRE_FALSE(b);
  CHECK_THAT(b.error, Catch::Contains("did you mean 'KB'"));

  auto t = parse_duration("fast");
  REQUIRE_FALSE(t);
  CHECK_THAT(t.error, Catch::Contains("expected a time"));

  // The micro sign and the Greek mu: a hint to the ASCII unit.
  for (const char* micro : {"1.5\xC2\xB5s", "1.5\xCE\xBCs"}) {
    t = parse_duration(micro);
    REQUIRE_FALSE(t);
    CHECK_THAT(t.error, Catch::Contains("did you mean 'us'"));
  }

  auto bw = parse_bandwidth("5.3TB");
  REQUIRE_FALSE(bw);
  CHECK_THAT(bw.error, Catch::Contains("unknown bandwidth unit 'TB'"));
}

TEST_CASE("negative, fractional-base and overflowing values are rejected", "[units]") {
  auto n = parse_bytes("-4KiB");
  REQUIRE_FALSE(n);
  CHECK_THAT(n.error, Catch::Contains("must not be negative"));

  auto f = parse_bytes("0.5B");
  REQUIRE_FALSE(f);
  CHECK_THAT(f.error, Catch::Contains("not a whole number of bytes"));

  auto o = parse_bytes("16EiB");  // 2^64 bytes: one past the largest 64-bit count
  REQUIRE_FALSE(o);
  CHECK_THAT(o.error, Catch::Contains("overflows a 64-bit count of bytes"));

  auto big = parse_bytes("99999999999999999999999999TB");
  REQUIRE_FALSE(big);

  auto sub_ps = parse_duration("0.1ps");
  REQUIRE_FALSE(sub_ps);
  CHECK_THAT(sub_ps.error, Catch::Contains("picoseconds"));
}

TEST_CASE("formatting picks a short exact unit", "[units]") {
  CHECK(format(Frequency{2'100'000'000}) == "2.1GHz");
  CHECK(format(Frequency{1'980'000'000}) == "1.98GHz");
  CHECK(format(Bytes{65536}) == "64KiB");
  CHECK(format(Bytes{192'000'000'000}) == "192GB");
  CHECK(format(Bytes{0}) == "0B");
  CHECK(format(Bytes{131}) == "131B");
  CHECK(format(Bandwidth{5'300'000'000'000}) == "5.3TB/s");
  CHECK(format(Duration{1'500'000}) == "1.5us");
  CHECK(format(Duration{120'000}) == "120ns");
}

TEST_CASE("format then parse is the identity (seeded random values)", "[units]") {
  std::mt19937_64 rng(20261129);
  for (int i = 0; i < 20000; ++i) {
    // Mix small, round and arbitrary magnitudes.
    const std::uint64_t raw = rng();
    const std::uint64_t v = (i % 3 == 0) ? raw : (i % 3 == 1) ? raw >> (raw % 60)
                                                              : (raw % 1000) << (10 * (raw % 6));
    INFO("value " << v);
    REQUIRE(parse_bytes(format(Bytes{v})).value.bytes == v);
    REQUIRE(parse_frequency(format(Frequency{v})).value.hz == v);
    REQUIRE(parse_bandwidth(format(Bandwidth{v})).value.bytes_per_s == v);
    REQUIRE(parse_duration(format(Duration{v})).value.ps == v);
  }
}

TEST_CASE("plain_decimal: rounded, never an exponent, no trailing zeros", "[units]") {
  using tdmsim::units::plain_decimal;
  CHECK(plain_decimal(6e-05, 9) == "0.00006");
  CHECK(plain_decimal(1.2000000000000002, 12) == "1.2");
  CHECK(plain_decimal(0.30000000000000004, 12) == "0.3");
  CHECK(plain_decimal(0.7999999999999999, 12) == "0.8");
  CHECK(plain_decimal(1680.0, 9) == "1680");
  CHECK(plain_decimal(1e15, 9) == "1000000000000000");
  CHECK(plain_decimal(-2.5, 9) == "-2.5");
  CHECK(plain_decimal(0.0, 9) == "0");
}
