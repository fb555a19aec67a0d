#include "apps/tdmsim/describe_command.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <span>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "apps/tdmsim/output_dir.h"
#include "descriptors/format/descriptor_file.h"
#include "descriptors/format/example_descriptors.h"
#include "descriptors/format/moe_stream.h"
#include "workloads/util/atomic_write.h"
#include "workloads/util/input_file.h"

namespace tdmsim::cli {
namespace {

using format::AnyDescriptor;

std::string_view kind_name(const AnyDescriptor& d) {
  return std::holds_alternative<format::MoeDescriptor>(d) ? "MoE descriptor"
                                                          : "tensor descriptor file";
}

int write_example(const DescribeOptions& o, std::ostream& out, std::ostream& err) {
  if (o.output.empty() || o.output == "-") {
    err << "tdmsim: error: --example writes a binary file and needs --output FILE\n";
    return kExitBadInput;
  }
  const AnyDescriptor d = o.example == "moe" ? AnyDescriptor{format::example_moe_descriptor()}
                                             : AnyDescriptor{format::example_tensor_file()};
  const std::vector<std::byte> bytes = format::encode_any(d);
  write_output_file(o.output, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  out << fmt::format("wrote {} ({} bytes): example {}\n", o.output, bytes.size(), kind_name(d));
  return kExitOk;
}

}  // namespace

int run_describe(const DescribeOptions& o, std::ostream& out, std::ostream& err) {
  try {
    if (!o.output.empty() && o.output != "-") {
      check_output_file(o.output, o.force, o.file.empty() ? std::vector<fs::path>{} : std::vector<fs::path>{o.file});
    }
    if (!o.example.empty()) {
      if (!o.file.empty()) {
        err << "tdmsim: error: give a FILE or --example, not both\n";
        return kExitBadInput;
      }
      if (o.example != "moe" && o.example != "tensor") {
        err << "tdmsim: error: --example must be moe or tensor\n";
        return kExitBadInput;
      }
      return write_example(o, out, err);
    }
    if (o.file.empty()) {
      err << "tdmsim: error: give a descriptor FILE (or --example moe|tensor --output FILE)\n";
      return kExitBadInput;
    }
    std::string raw;
    try {
      raw = util::read_input_file(o.file, util::InputKind::descriptor);
    } catch (const util::InputFileError& e) {
      err << o.file << ": " << e.reason() << "\n";
      return kExitBadInput;
    }
    const auto bytes = std::as_bytes(std::span<const char>(raw.data(), raw.size()));
    const auto decoded = format::decode_any(bytes);
    std::string text;
    if (decoded) {
      text = std::visit(
          [&](const auto& d) {
            return o.format == "json" ? format::to_json(d).dump(2) + "\n" : format::to_text(d);
          },
          decoded.value());
    } else {
      // Longer than its first record: a stream of MoE descriptors back to back
      // (`tdmsim run --write-descriptors`)? Else the single-descriptor error.
      const auto stream = decoded.error().code == format::DescriptorErrorCode::size_mismatch
                              ? format::decode_moe_stream(bytes)
                              : format::Decoded<std::vector<format::StreamEntry>>(decoded.error());
      // A first record's size below the file's: records back to back.
      const std::uint64_t first_size = format::first_record_size(bytes);
      const bool records = first_size > 0 && first_size < bytes.size();
      if (!stream && records && stream.error().code != format::DescriptorErrorCode::bad_magic) {
        // Records back to back (the first's total_size is less than the file),
        // one of them faulty: its fault at its offset in the stream, not the
        // first record's size against the whole file's. (Bytes after a record
        // that do not start another are trailing bytes: the size mismatch.)
        err << o.file << ": invalid descriptor stream: " << stream.error().to_string() << "\n";
        return kExitBadInput;
      }
      if (!stream || stream.value().size() < 2) {
        err << o.file << ": invalid descriptor: " << decoded.error().to_string() << "\n";
        return kExitBadInput;
      }
      const auto& entries = stream.value();
      if (o.format == "json") {
        nlohmann::ordered_json all = nlohmann::ordered_json::array();
        for (const auto& e : entries) all.push_back(format::to_json(e.descriptor));
        text = all.dump(2) + "\n";
      } else {
        for (std::size_t i = 0; i < entries.size(); ++i) {
          text += fmt::format("{}descriptor {} of {} (bytes {}..{} of the stream)\n", i == 0 ? "" : "\n",
                              i + 1, entries.size(), entries[i].offset,
                              entries[i].offset + entries[i].bytes.size());
          text += format::to_text(entries[i].descriptor);
        }
      }
    }
    if (o.output.empty() || o.output == "-")
      out << text;
    else
      write_output_file(o.output, text);
    return kExitOk;
  } catch (const BadInput& e) {
    err << "tdmsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "tdmsim: error: " << failure_text(e) << "\n";
    return kExitFailure;
  }
}

void add_describe_command(CLI::App& app, CommandResult& result) {
  auto opts = std::make_shared<DescribeOptions>();
  auto* cmd = app.add_subcommand(
      "describe",
      "Decode, validate and print a MoE (TDMM) or tensor (TDMT) descriptor file, a stream of "
      "MoE descriptors (run --write-descriptors), or write an example one "
      "(docs/descriptor-format.md)");
  auto* file = cmd->add_option("file", opts->file, "Descriptor file");
  auto* format = cmd->add_option("-f,--format", opts->format, "text or json (of a decoded file)")
                     ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-o,--output", opts->output, "Write to this file instead of stdout");
  cmd->add_flag("--force", opts->force, "Replace an existing output file");
  cmd->add_option("--example", opts->example,
                  "Write an example descriptor (moe or tensor) to --output")
      ->check(CLI::IsMember({"moe", "tensor"}))
      ->excludes(file)
      ->excludes(format);  // (the example is the binary descriptor: no text or json)
  cmd->callback([opts, &result] { result.exit_code = run_describe(*opts, std::cout, std::cerr); });
}

}  // namespace tdmsim::cli
