#include "workloads/config/yaml_parse.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/eventhandler.h>

#include "workloads/util/input_file.h"

namespace tdmsim::config {
namespace {

struct Refused {
  YAML::Mark mark;
  std::string message;
};

// yaml-cpp's non-specific tags ("?" plain, "!" quoted) and the core schema's.
bool standard_tag(const std::string& tag) {
  static constexpr std::array<std::string_view, 7> kCore = {"null", "bool", "int", "float",
                                                            "str", "seq", "map"};
  if (tag.empty() || tag == "?" || tag == "!") return true;
  constexpr std::string_view kPrefix = "tag:yaml.org,2002:";
  if (!tag.starts_with(kPrefix)) return false;
  const std::string_view rest = std::string_view(tag).substr(kPrefix.size());
  for (auto c : kCore) {
    if (rest == c) return true;
  }
  return false;
}

std::string tag_text(const std::string& tag) {
  constexpr std::string_view kPrefix = "tag:yaml.org,2002:";
  if (tag.starts_with(kPrefix)) return "!!" + tag.substr(kPrefix.size());
  return tag;
}

// A first pass over the parser's events: checks each event before yaml-cpp
// descends further, so a deep file is refused at the level that is too deep,
// and counts the nodes a reader would visit with every alias expanded (an
// alias adds the size of the node it names), so "billion laughs" files are
// refused before anything walks the tree.
class Guard : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      throw Refused{mark, "a second YAML document starts here; a file holds one document "
                          "(remove the '---' and what follows, or split the file)"};
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    for (const Frame& f : open_) {
      if (f.anchor == anchor && anchor != YAML::NullAnchor) {
        throw Refused{mark, "an alias inside the node its anchor names (a cycle)"};
      }
    }
    const auto it = sizes_.find(anchor);
    add(mark, it == sizes_.end() ? 1 : it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    check_tag(mark, tag);
    if (const auto at = util::invalid_utf8_at(value); at != std::string_view::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(value[at]));
      throw Refused{mark, "invalid UTF-8 at offset " + std::to_string(at) +
                              " of this key or value (byte " + std::string(byte) +
                              "); files must be UTF-8"};
    }
    leaf(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, tag, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, tag, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  // An open list or mapping: its anchor and the expanded nodes seen in it.
  struct Frame {
    YAML::anchor_t anchor;
    std::uint64_t nodes;
  };

  static void check_tag(const YAML::Mark& mark, const std::string& tag) {
    if (!standard_tag(tag)) {
      throw Refused{mark, "unsupported tag '" + tag_text(tag) +
                              "' (only YAML's core tags such as !!str and !!int are allowed)"};
    }
  }
  void open(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor) {
    check_tag(mark, tag);
    if (static_cast<int>(open_.size()) >= kMaxYamlDepth) {
      throw Refused{mark, "nesting deeper than " + std::to_string(kMaxYamlDepth) +
                              " levels of lists and mappings"};
    }
    add(mark, 1);
    open_.push_back({anchor, 1});
  }
  void close() {
    const Frame f = open_.back();
    open_.pop_back();
    if (f.anchor != YAML::NullAnchor) sizes_[f.anchor] = f.nodes;
    if (!open_.empty()) open_.back().nodes += f.nodes - 1;  // the 1 was counted by add()
  }
  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1);
    if (anchor != YAML::NullAnchor) sizes_[anchor] = 1;
  }
  // Counts `n` more nodes in the document (and in the innermost open node).
  void add(const YAML::Mark& mark, std::uint64_t n) {
    // Both stay at most kMaxYamlNodes before the addition, so nothing overflows.
    if (n > kMaxYamlNodes || total_ + n > kMaxYamlNodes) {
      throw Refused{mark, "the document has more than " + std::to_string(kMaxYamlNodes) +
                              " values with its aliases expanded (too large, or aliases that "
                              "multiply, as in a \"billion laughs\" file)"};
    }
    total_ += n;
    if (!open_.empty()) open_.back().nodes += n;
  }

  int documents_ = 0;
  std::uint64_t total_ = 0;
  std::vector<Frame> open_;
  std::unordered_map<YAML::anchor_t, std::uint64_t> sizes_;
};

Location at(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

[[noreturn]] void refuse(const std::string& file, const YAML::Mark& m, std::string message) {
  throw ConfigError({Diagnostic{at(file, m), "", std::move(message)}});
}

}  // namespace

// What parse_yaml_guarded refuses, it finds in the events; parse_yaml skips
// that first pass (half of the parsing) for a text that cannot hold any of it:
// a short text of printable ASCII (so every scalar is valid UTF-8) with no
// '&', '*' (no anchors, no aliases), '!' (no tags), '\\' (no escapes), and
// no line that starts with "---", "..." or '%' (one document, no
// directives); its tree, once loaded, must then be well within the depth
// and node limits. Anything else, or a text yaml-cpp refuses, goes through
// parse_yaml_guarded, which reports it as before.
namespace {

// Loading is then quick (well under the node limit), and the margins keep
// the tree's own depth and count clear of any difference in how the guard
// counts.
constexpr std::size_t kQuickBytes = 64 * 1024;
constexpr int kQuickDepth = kMaxYamlDepth / 2;
constexpr std::uint64_t kQuickNodes = kMaxYamlNodes / 2;

bool quick_text(const std::string& text) {
  if (text.size() > kQuickBytes) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x7f || (u < 0x20 && c != '\n' && c != '\r' && c != '\t')) return false;
    if (c == '&' || c == '*' || c == '!' || c == '\\') return false;
    if (i == 0 || text[i - 1] == '\n' || text[i - 1] == '\r') {
      if (c == '%') return false;
      const std::string_view rest = std::string_view(text).substr(i, 3);
      if (rest == "---" || rest == "...") return false;
    }
  }
  return true;
}

// Whether `n` (nested `depth` collections deep) and what it holds stay
// within the quick limits, counting `count` nodes (keys too).
bool quick_tree(const YAML::Node& n, int depth, std::uint64_t& count) {
  if (++count > kQuickNodes) return false;
  if (n.IsSequence()) {
    if (depth + 1 > kQuickDepth) return false;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!quick_tree(*it, depth + 1, count)) return false;
    }
  } else if (n.IsMap()) {
    if (depth + 1 > kQuickDepth) return false;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!quick_tree(it->first, depth + 1, count) || !quick_tree(it->second, depth + 1, count)) return false;
    }
  }
  return true;
}

}  // namespace

YAML::Node parse_yaml_guarded(const std::string& text, const std::string& file) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    Guard guard;
    while (parser.HandleNextDocument(guard)) {
    }
    return YAML::Load(text);
  } catch (const Refused& r) {
    refuse(file, r.mark, r.message);
  } catch (const YAML::Exception& e) {
    refuse(file, e.mark, "YAML syntax error: " + e.msg);
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  // YAML allows no C0 control character but tab, LF and CR, and no DEL
  // (YAML 1.2 c-printable): refused here by name and position, before the
  // parser misreads one (a NUL as the end of a scalar) or its message echoes
  // the raw byte to a terminal (an ESC starts an escape sequence).
  int line = 1, column = 1;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "%02x", c);
      throw ConfigError({Diagnostic{{file, line, column}, "",
                                    std::string("a control character (byte 0x") + byte +
                                        (c == 0 ? ", NUL" : c == 0x1b ? ", ESC" : "") +
                                        ") in the text: YAML files hold printable text only (write \\x" + byte +
                                        " inside a double-quoted string for the character itself)"}});
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  if (quick_text(text)) {
    try {
      YAML::Node root = YAML::Load(text);
      std::uint64_t count = 0;
      if (quick_tree(root, 0, count)) return root;
    } catch (const YAML::Exception&) {
      // (parse_yaml_guarded reports it, or what the guard finds first.)
    }
  }
  return parse_yaml_guarded(text, file);
}

}  // namespace tdmsim::config
