// Reads user input files: only regular files, each kind within its size limit,
// never blocking. Every read of a user-named file (YAML, routing traces,
// descriptor files) goes through here, so pointing tdmsim at /dev/zero, a FIFO,
// a folder or a huge file is refused with a message instead of hanging or
// exhausting memory, and filesystem errors (a name too long, a symbolic-link
// loop) become messages instead of raw std::filesystem_error exceptions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tdmsim::util {

// What an input file holds; each kind has one size limit (kMaxInputBytes).
enum class InputKind { yaml, routing_trace, descriptor, kernel_config, arrival_trace, traffic_matrix };

// The size limits, declared once. YAML files are hand-written and small (the
// shipped ones are under 8 KiB); a routing trace lists top_k experts for each
// of up to 2^24 tokens; a descriptor stays under 64 MiB for 65536 experts and
// 2^20 slots (docs/descriptor-format.md).
inline constexpr std::uint64_t kMaxYamlBytes = 16ULL << 20;
inline constexpr std::uint64_t kMaxRoutingTraceBytes = 1ULL << 30;
inline constexpr std::uint64_t kMaxDescriptorBytes = 256ULL << 20;
// A tuned kernel table (AITER's CSV columns, kernel.config) has a few hundred
// bytes a row; AITER's own tables hold a few thousand rows.
inline constexpr std::uint64_t kMaxKernelConfigBytes = 64ULL << 20;
// An arrival trace (serving.trace) has one short CSV line per request, at most
// 10^6 requests.
inline constexpr std::uint64_t kMaxArrivalTraceBytes = 64ULL << 20;
// A collective's traffic matrix (collective --traffic): --gpus rows of --gpus
// byte counts, a few bytes each; 64 MiB holds a matrix of about 2000 GPUs.
inline constexpr std::uint64_t kMaxTrafficMatrixBytes = 64ULL << 20;

std::uint64_t max_input_bytes(InputKind kind);
std::string_view input_kind_name(InputKind kind);  // "YAML file", ...

// Why an input file cannot be read. reason() reads after the path, e.g.
// "is not a regular file (a FIFO)"; what() is "'PATH' " + reason().
class InputFileError : public std::runtime_error {
 public:
  InputFileError(std::filesystem::path path, std::string reason);
  const std::filesystem::path& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::filesystem::path path_;
  std::string reason_;
};

// Checks without opening it that `path` names a regular file (symbolic links
// followed) within `kind`'s limit, with a name that is valid UTF-8 (outputs
// record input paths in JSON). Throws InputFileError.
void check_input_file(const std::filesystem::path& path, InputKind kind);

// The whole file, after the same checks. The file is opened non-blocking and
// checked again on the open descriptor (so a FIFO swapped in after the check
// cannot block), and at most the limit is read. Throws InputFileError.
std::string read_input_file(const std::filesystem::path& path, InputKind kind);

// Whether `path` names an existing file of any type; false on any error
// (use where std::filesystem::exists would throw on a name too long or a
// symbolic-link loop; the read that follows then reports the reason).
bool input_exists(const std::filesystem::path& path) noexcept;

// The first invalid byte of `text` as UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF are invalid), or npos if it is valid.
std::size_t invalid_utf8_at(std::string_view text) noexcept;

}  // namespace tdmsim::util
