#include "workloads/config/loader.h"
#include "workloads/specs/partition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/core.h>

#include "workloads/config/writer.h"
#include "workloads/config/yaml_parse.h"
#include "workloads/util/input_file.h"
#include "workloads/config/units.h"

#ifndef TDMSIM_WORKLOADS_DIR
#define TDMSIM_WORKLOADS_DIR "workloads"
#endif

namespace tdmsim::config {

std::string_view kind_name(SpecKind k) {
  switch (k) {
    case SpecKind::machine: return "machine";
    case SpecKind::model: return "model";
    case SpecKind::scenario: return "scenario";
    case SpecKind::sweep: return "sweep";
    case SpecKind::kernel_profile: return "kernel_profile";
    case SpecKind::tenants: return "tenants";
  }
  return "?";
}

std::string_view kind_folder(SpecKind k) {
  switch (k) {
    case SpecKind::machine: return "machines";
    case SpecKind::model: return "models";
    case SpecKind::scenario: return "scenarios";
    case SpecKind::sweep: return "sweeps";
    case SpecKind::kernel_profile: return "kernel-profiles";
    case SpecKind::tenants: return "scenarios";
  }
  return "?";
}

std::vector<fs::path> default_roots() {
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("TDMSIM_WORKLOADS"); env != nullptr && *env != '\0') {
    roots.emplace_back(env);
  }
  roots.emplace_back(TDMSIM_WORKLOADS_DIR);
  return roots;
}

namespace {

constexpr SpecKind kAllKinds[] = {SpecKind::machine, SpecKind::model, SpecKind::scenario,
                                  SpecKind::sweep, SpecKind::kernel_profile, SpecKind::tenants};

[[noreturn]] void fail_now(const Location& where, const std::string& key, std::string msg) {
  throw ConfigError({Diagnostic{where, key, std::move(msg)}});
}

// Parses a file into a YAML tree; syntax errors carry their line and column.
// Reading is bounded (util/input_file.h); a file reached through a key was
// already checked there (check_ref), so a failure here names the file alone.
YAML::Node parse_file(const fs::path& file) {
  std::string text;
  try {
    text = util::read_input_file(file, util::InputKind::yaml);
  } catch (const util::InputFileError& e) {
    fail_now({file.string(), 0, 0}, "", e.reason());
  }
  return parse_yaml(text, file.string());
}

// Reports at the key that named `file` why it cannot be read, if it cannot:
// "<what> 'x.yaml' does not exist", "... is not a regular file (a FIFO)".
void check_ref(const fs::path& file, const Location& where, const std::string& key,
               const std::string& what) {
  try {
    util::check_input_file(file, util::InputKind::yaml);
  } catch (const util::InputFileError& e) {
    fail_now(where, key, what + " '" + display_path(file) + "' " + e.reason());
  }
}

// A file's identity for cycle detection: its canonical path, or (where the
// path cannot be resolved) its absolute normal form.
fs::path identity(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  if (ec) c = fs::absolute(p, ec).lexically_normal();
  return c;
}

// The file `ref` names relative to `from`'s folder, with ".yaml" optional.
fs::path relative_file(std::string_view ref, const fs::path& from) {
  fs::path p = from.parent_path() / fs::path(std::string(ref));
  if (!util::input_exists(p) && p.extension() != ".yaml") p += ".yaml";
  return p;
}

// Finds the file named by a loaded spec's reference key (e.g. a scenario's
// `machine:`), relative to the file that set the key: a base file's `model:
// m.yaml` names the m.yaml beside the base, whichever file derives from it.
template <class S>
fs::path find_ref(const Loader& loader, const Loaded<S>& from, const std::string& key,
                  const std::string& ref, SpecKind kind) {
  const Location where = nearest_location(from.set_at, key, {display_path(from.file), 1, 1});
  fs::path setter = from.file;
  if (const auto it = from.set_at.find(key); it != from.set_at.end() && !it->second.file.empty()) {
    setter = it->second.file;
  }
  return loader.find(ref, kind, setter, where, key);
}

// Re-reports diagnostics against one sweep-axis value's line.
void report_at_value(const Diagnostics& local, const Location& at, const std::string& key,
                     const std::string& value, Diagnostics& out) {
  for (const auto& d : local.items()) {
    out.add(at, key, "value '" + value + "': " + (d.key.empty() ? "" : d.key + ": ") + d.message);
  }
}

// A spec's files as Checker takes them: the one named first, then its bases.
template <class S>
std::vector<std::string> display_chain(const Loaded<S>& l) {
  std::vector<std::string> chain;
  for (const auto& f : l.chain) chain.push_back(display_path(f));
  return chain;
}

// `layers`: the chain's parsed files, the one named first (as Loader::load
// holds them), for a scenario's or machine's inert-key check.
template <class S>
void check_spec(const S& spec, const Loaded<S>& l, Diagnostics& d,
                const std::vector<std::pair<fs::path, YAML::Node>>& layers) {
  Checker c(l.set_at, {display_path(l.file), 1, 1}, d, display_chain(l));
  check(spec, c);
  if constexpr (std::is_same_v<S, ScenarioSpec> || std::is_same_v<S, MachineSpec>) {
    // The keys inert in the spec as the file `file` (display path) and its
    // bases make it, without the overlays above: the layers from the deepest
    // base up to that file read again into defaults. (A machine's kernel
    // profile is not among them: no inert machine key depends on it.)
    const auto inert_below = [&](const std::string& file) {
      S partial = defaults<S>();
      Diagnostics ignored;
      SetMap where;
      for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        ReadContext ctx{display_path(it->first), &ignored, &where};
        Reader reader(it->second, "", ctx, {"base", "kind"});
        partial.visit(reader);
        reader.finish();
        if (display_path(it->first) == file) break;
      }
      return inert_keys(partial);
    };
    check_inert(inert_keys(spec), c, inert_below);
  }
}

}  // namespace

namespace {
// `p` without its "." parts: the folder of ./x.yaml is the working folder, not
// ".". (".." is kept: through a symlinked folder, a/.. is not where a is.)
fs::path without_dots(const fs::path& p) {
  fs::path out;
  for (const auto& part : p) {
    if (part != ".") out /= part;
  }
  return out;
}

// The kind a file's folder says (machines/ -> machine, ...); tenants files
// sit among the scenarios and are told by their kind: key alone.
std::optional<SpecKind> kind_by_folder(const fs::path& file) {
  std::error_code ec;
  const std::string folder = without_dots(fs::absolute(file, ec)).parent_path().filename().string();
  for (SpecKind kind : kAllKinds) {
    if (kind != SpecKind::tenants && folder == kind_folder(kind)) return kind;
  }
  return std::nullopt;
}

// Whether a file of `kind` sits in the folder of another kind (tenants files
// belong among the scenarios).
bool in_other_kinds_folder(std::optional<SpecKind> folder, SpecKind kind) {
  return folder && *folder != kind && !(kind == SpecKind::tenants && *folder == SpecKind::scenario);
}
}  // namespace

bool Loader::reads_as(SpecKind kind, const fs::path& file) const {
  try {
    switch (kind) {
      case SpecKind::machine: (void)machine(file); break;
      case SpecKind::model: (void)model(file); break;
      case SpecKind::scenario: (void)scenario(file); break;
      case SpecKind::sweep: (void)sweep(file); break;
      case SpecKind::kernel_profile: (void)kernel_profile(file); break;
      case SpecKind::tenants: (void)tenants(file); break;
    }
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

SpecKind Loader::kind_of(const fs::path& file) const {
  const YAML::Node root = parse_file(file);
  const std::optional<SpecKind> by_folder = kind_by_folder(file);
  if (root.IsMap() && root["kind"]) {
    const YAML::Node k = root["kind"];
    const Location at = location_of(display_path(file), k);
    for (SpecKind kind : kAllKinds) {
      if (!k.IsScalar() || k.Scalar() != kind_name(kind)) continue;
      if (in_other_kinds_folder(by_folder, kind)) {
        fail_now(at, "kind",
                 "this file is in a " + std::string(kind_folder(*by_folder)) + "/ folder, which holds " +
                     std::string(kind_name(*by_folder)) + " files, but it says kind: " +
                     k.Scalar());
      }
      return kind;
    }
    std::vector<std::string> names;
    for (SpecKind kind : kAllKinds) names.emplace_back(kind_name(kind));
    fail_now(at, "kind", one_of_message(names, k.IsScalar() ? k.Scalar() : node_kind(k)));
  }
  if (by_folder) return *by_folder;
  fail_now({display_path(file), 1, 1}, "kind",
           "cannot tell what this file describes: add "
           "'kind: machine|model|scenario|sweep|kernel_profile|tenants' or keep it in a machines/, "
           "models/, scenarios/, sweeps/ or kernel-profiles/ folder");
}

template <class S>
Loaded<S> Loader::load(const fs::path& file, SpecKind kind) const {
  Loaded<S> out{defaults<S>(), file, {}, {}, {}};
  Diagnostics diags;
  // Layers are read base-first; `pending` holds the chain from `file` down.
  // Each file is parsed once, and cycles are found through a set of the
  // chain's identities, so a long chain costs time linear in its length.
  std::vector<std::pair<fs::path, YAML::Node>> pending;
  std::optional<SpecKind> folder_kind;  // `file` sits in the folder of this other kind
  std::set<fs::path> seen = {identity(file)};
  fs::path current = file;
  while (true) {
    const YAML::Node root = parse_file(current);
    if (!root.IsMap()) {
      fail_now({display_path(current), 1, 1}, "",
               root.IsNull() ? std::string("file is empty; expected a mapping of keys")
                             : "expected a mapping of keys at the top level, got " + node_kind(root));
    }
    if (const YAML::Node k = root["kind"]; k && (!k.IsScalar() || k.Scalar() != kind_name(kind))) {
      fail_now(location_of(display_path(current), k), "kind",
               "this file is read as a " + std::string(kind_name(kind)) + ", but it says kind: " +
                   (k.IsScalar() ? k.Scalar() : node_kind(k)));
    } else if (!k && current == file) {
      // In another kind's folder (a machine file given to `tdmsim run`):
      // if it does not read as this kind, that is said below instead of one
      // unknown key after another. (A folder's name alone does not refuse a
      // file: a work folder may be called models/.)
      if (const std::optional<SpecKind> other = kind_by_folder(current); in_other_kinds_folder(other, kind)) {
        folder_kind = other;
      }
    }
    out.chain.push_back(current);
    pending.emplace_back(current, root);
    const YAML::Node base = root["base"];
    if (!base) break;
    const Location at = location_of(display_path(current), base);
    if (!base.IsScalar() || base.Scalar().empty()) {
      fail_now(at, "base", "expected the path of a base file, got " + node_kind(base));
    }
    const fs::path next = relative_file(base.Scalar(), current);
    check_ref(next, at, "base", "base file");
    if (!seen.insert(identity(next)).second) {
      std::string cycle;
      for (const auto& c : out.chain) cycle += display_path(c) + " -> ";
      fail_now(at, "base", "base cycle: " + cycle + display_path(next));
    }
    current = next;
  }
  std::string profile_name;  // a machine's kernel profile, by its name
  if constexpr (std::is_same_v<S, MachineSpec>) profile_name = attach_profile(out, pending);
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
    ReadContext ctx{display_path(it->first), &diags, &out.set_at};
    Reader reader(it->second, "", ctx, {"base", "kind"});
    out.spec.visit(reader);
    reader.finish();
  }
  // A profile named as written (a name or a path) stays so, as config show
  // prints it and a reader finds it again; unset (`~` in an overlay), it is the
  // isa's, by its name.
  if constexpr (std::is_same_v<S, MachineSpec>) {
    if (out.spec.kernel_profile.empty()) out.spec.kernel_profile = profile_name;
  }
  // Said only where the file reads cleanly as its folder's kind: a file of
  // this kind with mistakes, kept in such a folder, gets its own errors.
  if (folder_kind && !diags.empty() && reads_as(*folder_kind, file)) {
    fail_now({display_path(file), 1, 1}, "kind",
             "this is a " + std::string(kind_name(*folder_kind)) + " file (it is in a " +
                 std::string(kind_folder(*folder_kind)) + "/ folder and reads as one), read here as a " +
                 std::string(kind_name(kind)) + ": give a " + std::string(kind_name(kind)) + " file");
  }
  if (diags.empty()) {
    RequiredChecker req("", out.set_at, {display_path(file), 1, 1}, diags);
    out.spec.visit(req);
  }
  if (diags.empty()) check_spec(out.spec, out, diags, pending);
  diags.throw_if_any();
  return out;
}

template <class Layers>
std::string Loader::attach_profile(Loaded<MachineSpec>& out, const Layers& layers) const {
  // The file nearest the machine's that names a profile; else its isa's.
  fs::path profile;
  for (const auto& [file, root] : layers) {
    const YAML::Node ref = root["kernel_profile"];
    if (!ref) continue;
    if (ref.IsNull()) break;  // `~` unsets a base's profile: the isa's, as if never named
    const Location at = location_of(display_path(file), ref);
    if (!ref.IsScalar() || ref.Scalar().empty()) {
      fail_now(at, "kernel_profile", "expected a kernel profile's name or path, got " + node_kind(ref));
    }
    profile = find(ref.Scalar(), SpecKind::kernel_profile, file, at, "kernel_profile");
    break;
  }
  if (profile.empty()) {
    for (const auto& [file, root] : layers) {
      const YAML::Node isa = root["isa"];
      if (!isa) continue;
      // A bad isa is reported when the machine itself is read.
      if (!isa.IsScalar()) return {};
      const auto parsed = ValueTraits<IsaFamily>::parse(isa.Scalar());
      if (!parsed) return {};
      profile = find(default_kernel_profile(parsed.value), SpecKind::kernel_profile, file,
                     location_of(display_path(file), isa), "isa");
      break;
    }
  }
  if (profile.empty()) return {};  // no isa: reported as a missing required key
  const Loaded<KernelProfileSpec> p = kernel_profile(profile);
  out.spec.kernels = p.spec.kernels;
  out.spec.kernel_profile = p.spec.name;
  out.also_read = p.chain;
  for (const auto& [key, at] : p.set_at) {
    if (key != "name" && key != "description") out.set_at["kernels." + key] = at;
  }
  return p.spec.name;
}

Loaded<MachineSpec> Loader::machine(const fs::path& f) const {
  return load<MachineSpec>(f, SpecKind::machine);
}
Loaded<KernelProfileSpec> Loader::kernel_profile(const fs::path& f) const {
  return load<KernelProfileSpec>(f, SpecKind::kernel_profile);
}
Loaded<ModelSpec> Loader::model(const fs::path& f) const {
  return load<ModelSpec>(f, SpecKind::model);
}
Loaded<ScenarioSpec> Loader::scenario(const fs::path& f) const {
  return load<ScenarioSpec>(f, SpecKind::scenario);
}
Loaded<SweepSpec> Loader::sweep(const fs::path& f) const {
  Loaded<SweepSpec> s = load<SweepSpec>(f, SpecKind::sweep);
  add_jitter_values(s.spec);  // (checked with the rest: the jitter values are axis values from here on)
  return s;
}
Loaded<TenantsSpec> Loader::tenants(const fs::path& f) const {
  return load<TenantsSpec>(f, SpecKind::tenants);
}

std::vector<std::string> Loader::names(SpecKind kind) const {
  std::vector<std::string> out;
  for (const auto& root : roots_) {
    const fs::path dir = root / kind_folder(kind);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".yaml") out.push_back(it->path().stem().string());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
std::string looked_in(const std::vector<fs::path>& dirs) {
  std::string out;
  for (const auto& d : dirs) out += (out.empty() ? "" : " and ") + display_path(d);
  return out;
}
}  // namespace

fs::path Loader::find(std::string_view ref, SpecKind kind, const fs::path& from,
                      const Location& where, const std::string& key) const {
  const bool is_path = ref.find('/') != std::string_view::npos || ref.ends_with(".yaml");
  if (is_path) {
    const fs::path p = relative_file(ref, from);
    check_ref(p, where, key, "file");
    return p;
  }
  // By name: the workloads folder this file sits in first, then the roots.
  // (`from` made absolute first: a file named as x.yaml from its own folder
  // has an empty parent path.)
  std::error_code ec;
  std::vector<fs::path> dirs = {
      without_dots(fs::absolute(from, ec)).parent_path().parent_path() / kind_folder(kind)};
  for (const auto& r : roots_) {
    if (fs::path d = r / kind_folder(kind); d.lexically_normal() != dirs.front().lexically_normal()) {
      dirs.push_back(std::move(d));
    }
  }
  for (const auto& d : dirs) {
    const fs::path p = d / (std::string(ref) + ".yaml");
    if (util::input_exists(p)) {
      check_ref(p, where, key, "file");
      return p;
    }
  }
  fail_now(where, key,
           "unknown " + std::string(kind_name(kind)) + " '" + std::string(ref) + "'" +
               did_you_mean(ref, names(kind)) + " (looked in " + looked_in(dirs) + ")");
}

ResolvedScenario Loader::resolve_scenario(const fs::path& file) const {
  return resolve_scenario(file, "");
}

ResolvedScenario Loader::resolve_scenario(const fs::path& file,
                                          const std::string& machine_ref) const {
  return resolve_scenario(file, machine_ref, false);
}

ResolvedScenario Loader::resolve_scenario(const fs::path& file, const std::string& machine_ref,
                                          bool kernel_config_replaced) const {
  ResolvedScenario r;
  r.scenario = scenario(file);
  if (machine_ref.empty()) {
    r.machine = machine(find_ref(*this, r.scenario, "machine", r.scenario.spec.machine,
                                 SpecKind::machine));
  } else {
    r.machine = machine(find(machine_ref, SpecKind::machine, fs::current_path() / "_",
                             {"--machine", 0, 0}, "machine"));
    r.scenario.spec.machine = r.machine.spec.name;
  }
  r.model = model(find_ref(*this, r.scenario, "model", r.scenario.spec.model, SpecKind::model));
  // A partitioned machine: the scenario runs on one partition (docs/partitions.md).
  r.machine.spec = partition_machine(r.machine.spec);
  Diagnostics diags;
  // The trace itself is read when the routing is built; checking here that it
  // can be read lets `config validate` refuse what a run would.
  if (const auto& routing = r.scenario.spec.routing;
      routing.source == RoutingSource::trace && !routing.trace.empty()) {
    const fs::path trace = routing_trace_path(r.scenario);
    try {
      util::check_input_file(trace, util::InputKind::routing_trace);
    } catch (const util::InputFileError& e) {
      diags.add(nearest_location(r.scenario.set_at, "routing.trace", {display_path(file), 1, 1}),
                "routing.trace", "routing trace " + std::string(e.what()));
    }
  }
  // Likewise the tuned kernel table: read (and its rows checked) by the plan;
  // unless the caller replaces it (and checks its own).
  if (!r.scenario.spec.kernel.config.empty() && !kernel_config_replaced) {
    try {
      util::check_input_file(kernel_config_path(r.scenario), util::InputKind::kernel_config);
    } catch (const util::InputFileError& e) {
      diags.add(nearest_location(r.scenario.set_at, "kernel.config", {display_path(file), 1, 1}),
                "kernel.config", "kernel config table " + std::string(e.what()));
    }
  }
  // And the arrival trace of a request stream: read by `tdmsim run`.
  if (const auto& serving = r.scenario.spec.serving; serving && !serving->trace.empty()) {
    try {
      util::check_input_file(serving_trace_path(r.scenario), util::InputKind::arrival_trace);
    } catch (const util::InputFileError& e) {
      diags.add(nearest_location(r.scenario.set_at, "serving.trace", {display_path(file), 1, 1}),
                "serving.trace", "arrival trace " + std::string(e.what()));
    }
  }
  Checker c(r.scenario.set_at, {display_path(file), 1, 1}, diags, display_chain(r.scenario));
  check(r.scenario.spec, r.model.spec, r.machine.spec, c);
  diags.throw_if_any();
  return r;
}

namespace {
// A file a scenario key names, relative to the file that set the key.
fs::path relative_to_setter(const Loaded<ScenarioSpec>& scenario, const std::string& value,
                            const std::string& key) {
  const fs::path file(value);
  if (file.is_absolute()) return file;
  fs::path from = scenario.file;
  if (const auto it = scenario.set_at.find(key); it != scenario.set_at.end() && !it->second.file.empty()) {
    from = it->second.file;
  }
  return from.parent_path() / file;
}
}  // namespace

fs::path routing_trace_path(const Loaded<ScenarioSpec>& scenario) {
  return relative_to_setter(scenario, scenario.spec.routing.trace, "routing.trace");
}

fs::path kernel_config_path(const Loaded<ScenarioSpec>& scenario) {
  return relative_to_setter(scenario, scenario.spec.kernel.config, "kernel.config");
}

fs::path serving_trace_path(const Loaded<ScenarioSpec>& scenario) {
  return relative_to_setter(scenario, scenario.spec.serving ? scenario.spec.serving->trace : std::string(),
                            "serving.trace");
}

namespace {

// The JSON pointer of a parameter's dotted sub-path ("memory.hbm.bandwidth"
// -> /memory/hbm/bandwidth) in its spec's to_json.
Json::json_pointer param_pointer(std::string_view subpath) {
  std::string ptr(subpath);
  std::replace(ptr.begin(), ptr.end(), '.', '/');
  return Json::json_pointer("/" + ptr);
}

// The parameter's current value times `factor`, as a value text with the
// parameter's unit ("2100MHz" x0.8 -> "1680MHz"); an integer parameter is
// rounded to the nearest integer. Empty, with `why` set, if it has no number.
std::string scaled_value(const Json& current, double factor, std::string& why) {
  // 9 significant digits, never an exponent (a unit follows: 6e-05us would
  // not parse).
  const auto text = [&why](double v) {
    if (!std::isfinite(v) || std::fabs(v) > 1e300) {
      why = "the scaled value is beyond any the parameter takes";
      return std::string();
    }
    return units::plain_decimal(v, 9);
  };
  if (current.is_number_integer() || current.is_number_unsigned()) {
    const double v = std::round(current.get<double>() * factor);
    return std::fabs(v) <= 1e300 ? fmt::format("{:.0f}", v) : text(v);
  }
  if (current.is_number_float()) return text(current.get<double>() * factor);
  if (current.is_string()) {
    const std::string& s = current.get_ref<const std::string&>();
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc{} && ptr != s.data()) return text(v * factor) + std::string(ptr, s.data() + s.size());
  }
  why = "a relative value (xF) needs a numeric parameter, and this one is " + current.dump();
  return {};
}

}  // namespace

template <class S>
void apply_override(S& spec, std::string_view subpath, const std::string& value_text,
                    const Location& where, const std::string& key, Diagnostics& diags) {
  const auto keys = all_keys<S>();
  if (std::find(keys.begin(), keys.end(), subpath) == keys.end()) {
    diags.add(where, key, "no such parameter '" + std::string(subpath) + "'" +
                              did_you_mean(subpath, keys));
    return;
  }
  // "xF": F times the value the parameter has before this override (so a
  // sensitivity study can state its perturbations relative to the base).
  std::string value = value_text;
  if (const auto factor = relative_factor(value_text)) {
    const Json current = to_json(spec);
    const Json::json_pointer jp = param_pointer(subpath);
    std::string why = current.contains(jp) ? "" : "the parameter has no value to scale";
    if (why.empty()) value = scaled_value(current[jp], *factor, why);
    if (!why.empty()) {
      diags.add(where, key, "value '" + value_text + "': " + why);
      return;
    }
  }
  // Build {a: {b: {c: value}}} and read it like an overlay file.
  YAML::Node root(YAML::NodeType::Map);
  YAML::Node cur = root;
  std::string_view rest = subpath;
  while (true) {
    const auto dot = rest.find('.');
    const std::string part(rest.substr(0, dot));
    if (dot == std::string_view::npos) {
      try {
        cur[part] = parse_yaml(value.empty() ? std::string("''") : value, where.file);
      } catch (const ConfigError& e) {
        diags.add(where, key, "value '" + value + "': " + e.diagnostics().front().message);
        return;
      }
      break;
    }
    cur[part] = YAML::Node(YAML::NodeType::Map);
    cur.reset(cur[part]);  // rebind; yaml-cpp's operator= would overwrite the node
    rest.remove_prefix(dot + 1);
  }
  Diagnostics local;
  SetMap set_at;
  ReadContext ctx{where.file, &local, &set_at};
  Reader reader(root, "", ctx);
  spec.visit(reader);
  reader.finish();
  if (local.empty()) {
    Checker c(set_at, where, local);
    check(spec, c);
  }
  // Report against the axis value's own line, whatever the synthetic tree said.
  const std::string shown =
      "value '" + value_text + "'" + (value == value_text ? std::string() : " (= '" + value + "')");
  for (const auto& d : local.items()) diags.add(where, key, shown + ": " + d.message);
}

template void apply_override(MachineSpec&, std::string_view, const std::string&,
                             const Location&, const std::string&, Diagnostics&);
template void apply_override(ModelSpec&, std::string_view, const std::string&, const Location&,
                             const std::string&, Diagnostics&);
template void apply_override(ScenarioSpec&, std::string_view, const std::string&,
                             const Location&, const std::string&, Diagnostics&);

namespace {

// The jitter values (add_jitter_values) that measure no timing noise on the
// base: an integer parameter (whose smallest step is not a J move, and which
// may round back to its value), a value the parameter cannot take (a size of
// whole bytes), or one that leaves the base as it is. Dropped, so that every
// jitter point is a small move of one real-valued parameter. Then refuses
// `jitter` where no axis keeps a jitter value, or where the base does not run
// both paths (the noise floor is of the TDM speedup).
void prune_jitter(ResolvedSweep& r) {
  SweepSpec& sw = r.sweep.spec;
  if (!(sw.jitter > 0) || sw.mode != SweepMode::oat) return;
  const Location at = nearest_location(r.sweep.set_at, "jitter", {display_path(r.sweep.file), 1, 1});
  std::size_t kept = 0;
  for (auto& axis : sw.axes.items) {
    if (axis.jitter_values == 0) continue;
    const auto ref = axis_ref(axis.key);
    const bool param = ref && (ref->target == AxisTarget::machine_param || ref->target == AxisTarget::model_param ||
                               ref->target == AxisTarget::scenario_param);
    for (std::size_t i = axis.values.size(); i-- > axis.own_values();) {
      bool keep = param;
      if (keep) {
        Diagnostics local;
        const auto moved = [&](auto spec) {
          const Json before = to_json(spec);
          const Json::json_pointer jp = param_pointer(ref->sub);
          if (!before.contains(jp) || (!before[jp].is_number_float() && !before[jp].is_string())) return false;
          apply_override(spec, ref->sub, axis.values[i], axis.where, axis.key, local);
          return local.empty() && to_json(spec) != before;
        };
        keep = ref->target == AxisTarget::machine_param ? moved(r.base.machine.spec)
               : ref->target == AxisTarget::model_param ? moved(r.base.model.spec)
                                                         : moved(r.base.scenario.spec);
      }
      if (!keep) {
        axis.values.erase(axis.values.begin() + static_cast<std::ptrdiff_t>(i));
        axis.value_where.erase(axis.value_where.begin() + static_cast<std::ptrdiff_t>(i));
        --axis.jitter_values;
      }
    }
    kept += axis.jitter_values;
  }
  if (kept == 0) {
    fail_now(at, "jitter", fmt::format("jitter {} moves no parameter of the base: no axis given as factors is a "
                                       "real-valued parameter that a {}% step changes (integer parameters are "
                                       "not moved)", sw.jitter, sw.jitter * 100));
  }
  if (r.base.scenario.spec.path != ExecPath::both || !r.base.machine.spec.tdm ||
      std::any_of(sw.axes.items.begin(), sw.axes.items.end(),
                  [](const auto& a) { return a.key == "path"; })) {
    fail_now(at, "jitter", "the noise floor is of the TDM speedup: the base scenario must run path both on a "
                           "machine with a tdm: section, and no axis may change the path");
  }
}

}  // namespace

ResolvedSweep Loader::resolve_sweep(const fs::path& file) const {
  ResolvedSweep r;
  r.sweep = sweep(file);
  const auto& sw = r.sweep.spec;
  const fs::path base_file = find_ref(*this, r.sweep, "scenario", sw.scenario, SpecKind::scenario);
  // A scenario need not say its kind (the sweep's key says it); only a file that
  // says kind: tenants is refused here, and resolve_scenario reports the rest.
  bool tenants = false;
  try {
    tenants = kind_of(base_file) == SpecKind::tenants;
  } catch (const ConfigError&) {
  }
  if (tenants) {
    fail_now(nearest_location(r.sweep.set_at, "scenario", {display_path(file), 1, 1}), "scenario",
             display_path(base_file) + " is a tenants file; sweeps over tenants are not supported (run it with "
             "tdmsim run; docs/partitions.md)");
  }
  // An axis over kernel.config replaces the base's table: the base's own file
  // need not exist (a point that keeps it reads it, and fails, when planned).
  const bool axis_sets_kernel_config = std::any_of(sw.axes.items.begin(), sw.axes.items.end(), [](const auto& a) {
    const auto ref = axis_ref(a.key);
    return ref && ref->target == AxisTarget::scenario_param && ref->sub == "kernel.config";
  });
  r.base = resolve_scenario(base_file, "", axis_sets_kernel_config);
  Diagnostics diags;
  if (!sw.machine.empty()) {
    r.base.machine = machine(find_ref(*this, r.sweep, "machine", sw.machine, SpecKind::machine));
    // The base scenario must still fit the replacement machine.
    Diagnostics local;
    Checker c(r.base.scenario.set_at, {display_path(r.base.scenario.file), 1, 1}, local);
    check(r.base.scenario.spec, r.base.model.spec, r.base.machine.spec, c);
    const Location at = nearest_location(r.sweep.set_at, "machine", {display_path(file), 1, 1});
    report_at_value(local, at, "machine", sw.machine, diags);
  }
  prune_jitter(r);
  const bool machine_swapped = swaps_machine(sw.axes);
  for (const auto& axis : sw.axes.items) {
    const auto ref = axis_ref(axis.key);
    const std::string key = "axes." + axis.key;
    if (ref && ref->target == AxisTarget::path) {
      for (std::size_t i = 0; i < axis.values.size(); ++i) {
        const std::string& v = axis.values[i];
        if (v != "software" && v != "tdm" && v != "both") {
          diags.add(axis.value_where[i], key,
                    "value '" + v + "': " + one_of_message({"software", "tdm", "both"}, v));
        }
      }
      continue;
    }
    if (ref && (ref->target == AxisTarget::machine || ref->target == AxisTarget::model)) {
      // Each machine or model must load and fit the base scenario.
      for (std::size_t i = 0; i < axis.values.size(); ++i) {
        const Location& at = axis.value_where[i];
        const std::string& v = axis.values[i];
        try {
          Diagnostics local;
          const SetMap no_origins;
          Checker c(no_origins, at, local);
          if (ref->target == AxisTarget::machine) {
            const auto m = machine(find(v, SpecKind::machine, file, at, key));
            check(r.base.scenario.spec, r.base.model.spec, m.spec, c);
          } else {
            const auto m = model(find(v, SpecKind::model, file, at, key));
            check(r.base.scenario.spec, m.spec, r.base.machine.spec, c);
          }
          report_at_value(local, at, key, v, diags);
        } catch (const ConfigError& e) {
          for (const auto& d : e.diagnostics()) {
            if (d.where.file == at.file) diags.add(at, key, "value '" + v + "': " + d.message);
            else diags.add(d.where, d.key, d.message);
          }
        }
      }
      continue;
    }
    const auto dot = axis.key.find('.');
    const std::string root = axis.key.substr(0, dot);
    const std::string sub = axis.key.substr(dot + 1);
    std::vector<std::string> keys = root == "machine" ? all_keys<MachineSpec>()
                                    : root == "model" ? all_keys<ModelSpec>()
                                                      : all_keys<ScenarioSpec>();
    if (std::find(keys.begin(), keys.end(), sub) == keys.end()) {
      diags.add(axis.where, key, "no such " + root + " parameter '" + sub + "'" +
                                     did_you_mean(sub, keys));
      continue;
    }
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      const Location& at = axis.value_where[i];
      MachineSpec machine_spec = r.base.machine.spec;
      ModelSpec model_spec = r.base.model.spec;
      ScenarioSpec scenario_spec = r.base.scenario.spec;
      const std::size_t before = diags.size();
      if (root == "machine" && sub.starts_with("tdm.") && !machine_spec.tdm) {
        if (machine_swapped) continue;  // checked per point, on the point's machine
        diags.add(at, key, "value '" + axis.values[i] + "': machine " + machine_spec.name +
                               " has no tdm: section to change (sweep a TDM machine such as "
                               "mi500x-tdm)");
        continue;
      }
      if (root == "machine") apply_override(machine_spec, sub, axis.values[i], at, key, diags);
      else if (root == "model") apply_override(model_spec, sub, axis.values[i], at, key, diags);
      else apply_override(scenario_spec, sub, axis.values[i], at, key, diags);
      if (diags.size() != before) continue;
      // The point must still make sense as a whole (e.g. fit in HBM).
      Diagnostics whole;
      const SetMap no_origins;  // every problem is reported at the axis value
      Checker c(no_origins, at, whole);
      check(scenario_spec, model_spec, machine_spec, c);
      report_at_value(whole, at, key, axis.values[i], diags);
    }
  }
  diags.throw_if_any();
  return r;
}

}  // namespace tdmsim::config
