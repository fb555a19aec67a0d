// tdmsim: command-line entry point. Exit codes: 0 ok, 1 runtime failure,
// 2 bad input (configuration or command line).
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include "apps/tdmsim/collective_command.h"
#include "apps/tdmsim/config_commands.h"
#include "apps/tdmsim/describe_command.h"
#include "apps/tdmsim/emulate_command.h"
#include "apps/tdmsim/gpu_case_command.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/run_command.h"
#include "apps/tdmsim/sim_commands.h"
#include "apps/tdmsim/sweep_command.h"
#include "sim/core/sim_error.h"
#include "sim/core/systemc_info.h"
#include "workloads/config/diagnostics.h"

#ifndef TDMSIM_VERSION
#define TDMSIM_VERSION "0.0.0"
#endif

namespace {

// CLI11 reports a mistyped command (`tdmsim frob`, `tdmsim config frob`) as
// "A subcommand is required": this names the word instead, and the commands
// there are. Empty where the arguments' commands all exist (options are left
// to CLI11).
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return {};
    const auto subs = at->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return {};
    CLI::App* next = nullptr;
    std::string names;
    for (CLI::App* s : subs) {
      if (s->check_name(word)) next = s;
      if (!s->get_group().empty()) names += (names.empty() ? "" : ", ") + s->get_name();
    }
    if (next == nullptr) {
      return "unknown command '" + word + "'" + (at == &app ? "" : " of '" + at->get_name() + "'") + " (commands: " +
             names + "; --help lists them)";
    }
    at = next;
  }
  return {};
}

// An option given an empty value (`--machine ""`) is refused: every option's
// empty value would read as the option left out, silently. (A positional may be
// "": `config aiter-tile ""` reads an empty tile name.)
void refuse_empty_option_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) {
        return value.empty() ? std::string("an empty value: give a value, or leave the option out where it is optional")
                             : std::string();
      },
      "");
  for (CLI::Option* opt : app.get_options()) {
    if (opt->nonpositional() && opt->get_type_size_max() > 0) opt->check(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_option_values(*sub);
}

// The arguments the chosen command (and its subcommands) did not recognise.
// CLI11 checks required arguments before it reports these, so `tdmsim run
// --bogus` said "scenario is required"; the misspelt option is the real fault.
std::vector<std::string> unrecognised(const CLI::App& app) {
  std::vector<std::string> out = app.remaining();
  for (const CLI::App* sub : app.get_subcommands()) {
    for (std::string& a : unrecognised(*sub)) out.push_back(std::move(a));
  }
  return out;
}

int run_tdmsim(int argc, char** argv, tdmsim::cli::StdoutGuard& out) {
  using namespace tdmsim::cli;
  CLI::App app{"tdmsim: MoE layers on AMD Instinct-class GPUs, emulated, simulated and "
               "cross-validated, with and without a hardware TDM MoE descriptor unit"};
  app.set_version_flag("--version", std::string("tdmsim " TDMSIM_VERSION " (SystemC ") +
                                        tdmsim::sim::systemc_version() + ")");
  app.require_subcommand(1);
  CommandResult result;
  add_config_commands(app, result, check_runnable_file);
  add_describe_command(app, result);
  add_emulate_command(app, result);
  add_gpu_case_command(app, result);
  add_sim_commands(app, result);
  add_collective_command(app, result);
  add_run_command(app, result);
  add_sweep_commands(app, result);
  app.footer("Exit codes: 0 success, 1 failure (a run-time or internal error), 2 bad input (a file, key or "
             "argument; nothing is written).");
  refuse_empty_option_values(app);
  // CLI11's own parse errors ("--machine is required") read like tdmsim's.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "tdmsim: error: " + std::string(e.what()) + "\nRun with --help for more information.\n";
  });
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::cerr << "tdmsim: error: " << unknown << "\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    if (const auto extra = unrecognised(app); !extra.empty()) {
      app.exit(CLI::ExtrasError(extra));
    } else {
      app.exit(e);
    }
    return kExitBadInput;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  } catch (const tdmsim::config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitBadInput;
  } catch (const BadInput& e) {
    std::cerr << "tdmsim: error: " << e.what() << "\n";  // (printable already)
    return kExitBadInput;
  } catch (const std::system_error& e) {
    // fmt::print throws this when stdout cannot take a full buffer; the
    // guard then reports it, once.
    if (std::ferror(stdout)) {
      out.note_error(e.code().value());
    } else {
      std::cerr << "tdmsim: error: " << tdmsim::config::printable(e.what()) << "\n";
    }
    return kExitFailure;
  } catch (...) {
    // Everything else, the simulator's errors and SystemC's reports included:
    // a configuration it cannot simulate is bad input, the rest internal.
    const auto f = tdmsim::sim::classify(std::current_exception());
    std::cerr << "tdmsim: error: " << tdmsim::config::printable(f.message) << "\n";
    return f.bad_input ? kExitBadInput : kExitFailure;
  }
  return result.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Output redirected to a full disk is a failure, not a success with
  // nothing written.
  tdmsim::cli::StdoutGuard out;
  return out.finish(run_tdmsim(argc, argv, out));
}
