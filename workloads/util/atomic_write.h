// Writes a whole file or nothing: the text goes to a temporary file beside the
// target, which is renamed over it only once complete, so an interrupted run
// never leaves half-written output.
#pragma once

#include <filesystem>
#include <string_view>

namespace tdmsim::util {

// Throws std::runtime_error (naming the path) if the file cannot be written.
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

}  // namespace tdmsim::util
