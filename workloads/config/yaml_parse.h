// Parses YAML text into a tree, refusing what yaml-cpp would otherwise accept
// silently or report badly: a second document, tags other than YAML's core
// ones, invalid UTF-8 in any scalar (keys included), and nesting deeper than
// kMaxYamlDepth. Anchors and aliases are allowed, but an alias inside the node
// its anchor names (a cycle) is refused, and so is a document that holds more
// than kMaxYamlNodes values once its aliases are expanded: yaml-cpp shares an
// aliased node rather than copying it, but the readers walk the tree, so a
// "billion laughs" file would otherwise cost exponential time.
#pragma once

#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

#include "workloads/config/diagnostics.h"

namespace tdmsim::config {

// Far deeper than any configuration (the schema nests 4 levels) and far below
// the depth at which yaml-cpp gives up with an unhelpful "bad file".
inline constexpr int kMaxYamlDepth = 64;

// Far more values than any configuration holds (the shipped ones hold a few
// hundred), and few enough that parsing stays within seconds and tens of MB:
// yaml-cpp is slow with large trees (a file of a million values took 76 s
// and 480 MB to refuse as an unknown key on a loaded 2-core machine).
inline constexpr std::uint64_t kMaxYamlNodes = 100'000;

// Throws ConfigError at `file`:line:column (lines and columns of `text`).
YAML::Node parse_yaml(const std::string& text, const std::string& file);

// The reference for parse_yaml: a first pass over the parser's events that
// refuses the above, then YAML::Load. parse_yaml gives the same tree or the
// same error, skipping the first pass where the text cannot hold anything
// it refuses (yaml_parse.cpp says when).
YAML::Node parse_yaml_guarded(const std::string& text, const std::string& file);

}  // namespace tdmsim::config
