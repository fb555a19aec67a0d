// The Python module `tdmsim` (pybind11; docs/api.md "Python"): YAML loading
// and validation and `tdmsim run` with the CLI's messages, and the descriptor
// API over NumPy arrays through the C API (include/tdmsim/tdmsim_moe.h).
#include <pybind11/eval.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "apps/tdmsim/config_commands.h"
#include "apps/tdmsim/layer_sim.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/run_command.h"
#include "apps/tdmsim/serving_queue.h"
#include "sim/core/sim_error.h"
#include "tdmsim/tdmsim_moe.h"
#include "workloads/config/loader.h"
#include "workloads/config/schema.h"

namespace py = pybind11;
using namespace tdmsim;

namespace {

// tdmsim.Error (RuntimeError) and its subclass tdmsim.ConfigError, set up at import.
PyObject* g_error = nullptr;
PyObject* g_config_error = nullptr;

py::object json_loads(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

// Runs `f`, raising the library's errors as the module's exceptions with the
// messages the CLI prints.
template <class F>
auto translated(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const config::ConfigError& e) {
    PyErr_SetString(g_config_error, e.what());
  } catch (const cli::BadInput& e) {  // bad input the CLI exits 2 for
    PyErr_SetString(g_config_error, e.what());
  } catch (const py::error_already_set&) {
    throw;
  } catch (...) {
    const sim::Failure failure = sim::classify(std::current_exception());
    PyErr_SetString(failure.bad_input ? g_config_error : g_error, failure.message.c_str());
  }
  throw py::error_already_set();
}

// A C API status as an exception: ConfigError, ValueError or Error.
void raise_status(tdmsim_status s) {
  if (s == TDMSIM_OK) return;
  const std::string message = fmt::format("{}: {}", tdmsim_status_name(s), tdmsim_last_error());
  PyObject* type = s == TDMSIM_ERR_CONFIG ? g_config_error
                   : s == TDMSIM_ERR_INVALID_ARGUMENT || s == TDMSIM_ERR_VERSION ? PyExc_ValueError
                                                                                 : g_error;
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

tdmsim_backend backend_from(const std::string& name) {
  if (name == "emulate") return TDMSIM_BACKEND_EMULATE;
  if (name == "simulate") return TDMSIM_BACKEND_SIMULATE;
  if (name == "gpu") return TDMSIM_BACKEND_GPU;
  throw py::value_error(fmt::format("backend '{}': one of emulate, simulate, gpu", name));
}

std::uint32_t policy_from(const std::string& name) {
  const auto p = config::enum_from_name<TdmPolicy>(name);
  if (!p) {
    throw py::value_error(fmt::format("policy '{}': {}", name,
                                      config::one_of_message(config::enum_names<TdmPolicy>(), name)));
  }
  return static_cast<std::uint32_t>(*p);
}

py::dict path_dict(const tdmsim_path_time& t) {
  py::dict d;
  d["total_s"] = t.total_s;
  d["routing_s"] = t.routing_s;
  d["sort_s"] = t.sort_s;
  d["experts_s"] = t.experts_s;
  return d;
}

using Array = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IdArray = py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>;

// An array argument as the C API reads it: NumPy arrays, anything with the
// buffer protocol, __array_interface__ or __array__ (a CPU torch tensor), or
// only __dlpack__ (through numpy.from_dlpack). Shares memory with `obj` when
// it is already C-contiguous in T; otherwise converted once. A CUDA tensor
// (__cuda_array_interface__) is refused here: see device_pointer.
template <class A>
A host_array(const py::handle& obj, const char* name) {
  if (py::isinstance<A>(obj)) return py::reinterpret_borrow<A>(obj);
  if (py::hasattr(obj, "__cuda_array_interface__")) {
    throw py::value_error(fmt::format("{} is a GPU array: pass it as a device array (d_w13, d_w2; gpu "
                                      "backend) or copy it to the host", name));
  }
  py::object source = py::reinterpret_borrow<py::object>(obj);
  if (!py::isinstance<py::array>(obj) && !py::hasattr(obj, "__array_interface__") &&
      !py::hasattr(obj, "__array__") && py::hasattr(obj, "__dlpack__")) {
    source = py::module_::import("numpy").attr("from_dlpack")(obj);
  }
  A a = A::ensure(source);
  if (!a) {
    PyErr_Clear();
    throw py::value_error(fmt::format("{}: cannot be read as a float array", name));
  }
  return a;
}

// Expert ids as the C API reads them (uint32): integer arrays only, every
// value in 0 .. 2^32 - 1, so that no id wraps or is truncated on the way
// (forcecast alone would turn -4294967295, 2^32 + 1 or 1.99 into 1).
IdArray id_array(const py::handle& obj, const char* name) {
  if (py::hasattr(obj, "__cuda_array_interface__")) {
    throw py::value_error(fmt::format("{} is a GPU array: copy it to the host", name));
  }
  const py::array a = py::module_::import("numpy").attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    throw py::value_error(fmt::format("{} must hold integers (expert ids), has dtype {}", name,
                                      std::string(py::str(a.dtype()))));
  }
  if (a.size() > 0) {
    const py::object bad = (a.attr("__lt__")(0)).attr("__or__")(a.attr("__gt__")(py::int_(0xFFFFFFFFull)));
    if (py::bool_(bad.attr("any")())) {
      const py::object at = py::module_::import("numpy").attr("argwhere")(bad).attr("__getitem__")(0);
      const py::tuple index = py::tuple(at.attr("tolist")());
      std::vector<std::string> where;
      for (const auto& i : index) where.push_back(py::str(i));
      throw py::value_error(fmt::format("{}[{}] is {}: not an expert id (0 .. 4294967295)", name,
                                        fmt::join(where, ", "),
                                        std::string(py::str(a.attr("__getitem__")(index)))));
    }
  }
  return IdArray::ensure(a);
}

// Checks an array's shape against the layer's (element counts alone would
// take a [E, H, 2I] array as [E, 2I, H], or a flat one).
void check_shape(const py::array& a, const std::vector<std::size_t>& shape, const char* name) {
  bool ok = static_cast<std::size_t>(a.ndim()) == shape.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = static_cast<std::size_t>(a.shape(i)) == shape[i];
  if (!ok) {
    std::vector<py::ssize_t> got(a.shape(), a.shape() + a.ndim());
    throw py::value_error(fmt::format("{} must have shape [{}], has [{}]", name, fmt::join(shape, ", "),
                                      fmt::join(got, ", ")));
  }
}

// A string argument that names a file or machine: an embedded NUL would cut
// it short where the C API reads it.
void check_text(const std::string& text, const char* name) {
  if (text.find('\0') != std::string::npos) throw py::value_error(fmt::format("{} holds a NUL character", name));
}

// A machine given in place of the scenario's: a name or path (None keeps the
// scenario's; "" is refused, as the CLI's --machine "" is).
void check_machine(const std::optional<std::string>& machine) {
  if (!machine) return;
  check_text(*machine, "machine");
  if (machine->empty()) throw py::value_error("machine is empty: None keeps the scenario's machine");
}

// A device array's address: __cuda_array_interface__ (torch CUDA tensors,
// CuPy), float32, C-contiguous, with `n` elements.
const void* device_pointer(const py::handle& obj, std::size_t n, const char* name) {
  if (!py::hasattr(obj, "__cuda_array_interface__")) {
    throw py::value_error(fmt::format("{} must expose __cuda_array_interface__ (a GPU array)", name));
  }
  const py::dict cai = obj.attr("__cuda_array_interface__");
  const std::string type = py::str(cai["typestr"]);
  if (type != "<f4") throw py::value_error(fmt::format("{} must be float32, is {}", name, type));
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    // C-contiguous strides are allowed to be given explicitly.
    const py::tuple shape = cai["shape"], strides = cai["strides"];
    py::ssize_t expect = 4;
    for (py::ssize_t i = static_cast<py::ssize_t>(shape.size()) - 1; i >= 0; --i) {
      if (strides[i].cast<py::ssize_t>() != expect) {
        throw py::value_error(fmt::format("{} must be C-contiguous", name));
      }
      expect *= shape[i].cast<py::ssize_t>();
    }
  }
  std::size_t count = 1;
  for (const auto& d : py::tuple(cai["shape"])) count *= d.cast<std::size_t>();
  if (count != n) throw py::value_error(fmt::format("{} has {} values, the layer needs {}", name, count, n));
  return reinterpret_cast<const void*>(py::tuple(cai["data"])[0].cast<std::uintptr_t>());
}

// A descriptor with its own stream, and the Python routing callback.
class Descriptor {
 public:
  Descriptor(const std::string& scenario, const std::string& policy, std::optional<std::string> machine,
             std::uint32_t num_experts, std::uint32_t experts_per_token, std::uint32_t hidden_size,
             std::uint32_t intermediate_size, std::uint64_t seed) {
    check_text(scenario, "scenario");
    check_machine(machine);
    tdmsim_moe_descriptor d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.version = TDMSIM_MOE_DESCRIPTOR_VERSION;
    d.num_experts = num_experts;
    d.experts_per_token = experts_per_token;
    d.hidden_size = hidden_size;
    d.intermediate_size = intermediate_size;
    d.routing_policy = policy_from(policy);
    d.scenario = scenario.c_str();
    d.machine = machine ? machine->c_str() : nullptr;
    d.seed = seed;
    tdmsim_moe_t h = nullptr;
    raise_status(tdmsim_moe_descriptor_create(&d, &h));
    moe_.reset(h);
    tdmsim_stream_t s = nullptr;
    raise_status(tdmsim_stream_create(&s));
    stream_.reset(s);
    raise_status(tdmsim_stream_bind_moe_descriptor(stream_.get(), moe_.get()));
    std::memset(&info_, 0, sizeof info_);
    info_.struct_size = sizeof info_;
    raise_status(tdmsim_moe_get_info(moe_.get(), &info_));
  }

  py::dict info() const {
    py::dict d;
    d["model"] = std::string(info_.model);
    d["machine"] = std::string(info_.machine);
    d["num_experts"] = info_.num_experts;
    d["experts_per_token"] = info_.experts_per_token;
    d["hidden_size"] = info_.hidden_size;
    d["intermediate_size"] = info_.intermediate_size;
    d["shared_experts"] = info_.shared_experts;
    d["policy"] = std::string(config::enum_name(static_cast<TdmPolicy>(info_.routing_policy)));
    d["machine_has_tdm"] = info_.machine_has_tdm != 0;
    d["seed"] = info_.seed;
    d["dtype"] = std::string(info_.dtype);
    d["activation"] = std::string(info_.activation);
    return d;
  }

  // fn(token, x_row) -> (ids, weights), or None to clear.
  void set_routing(std::optional<py::function> fn) {
    // The C API first: a refusal (from inside the callback, while forward
    // runs) leaves the function the C side still calls in place.
    raise_status(tdmsim_moe_set_custom_routing(moe_.get(), fn ? &Descriptor::route : nullptr, this));
    routing_ = std::move(fn);
  }

  // The optional weight arguments of forward (None: from the seed).
  struct Weights {
    py::object router = py::none(), router_bias = py::none(), router_correction_bias = py::none(),
               w13 = py::none(), w2 = py::none(), d_w13 = py::none(), d_w2 = py::none();
  };

  py::tuple forward(const py::object& x_in, const std::string& backend, bool allow_fallback,
                    const py::object& topk_ids_in, const py::object& topk_weights_in,
                    const Weights& weights) {
    const Array x = host_array<Array>(x_in, "x");
    std::optional<IdArray> topk_ids;
    std::optional<Array> topk_weights;
    if (!topk_ids_in.is_none()) topk_ids = id_array(topk_ids_in, "topk_ids");
    if (!topk_weights_in.is_none()) topk_weights = host_array<Array>(topk_weights_in, "topk_weights");
    if (x.ndim() != 2 || x.shape(1) != info_.hidden_size) {
      throw py::value_error(fmt::format("x must be [tokens, {}] (hidden size)", info_.hidden_size));
    }
    const auto tokens = static_cast<std::uint32_t>(x.shape(0));
    tdmsim_forward_args a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.tokens = tokens;
    a.x = x.data();  // no copy for a C-contiguous float32 array
    a.backend = backend_from(backend);
    a.allow_fallback = allow_fallback ? 1 : 0;
    if (topk_ids.has_value() != topk_weights.has_value()) {
      throw py::value_error("topk_ids and topk_weights go together");
    }
    if (topk_ids) {
      check_shape(*topk_ids, {tokens, info_.experts_per_token}, "topk_ids");
      check_shape(*topk_weights, {tokens, info_.experts_per_token}, "topk_weights");
      a.topk_ids = topk_ids->data();
      a.topk_weights = topk_weights->data();
    }
    // Weights: kept alive (and converted at most once) until forward returns.
    const std::size_t E = info_.num_experts, H = info_.hidden_size, I = info_.intermediate_size;
    std::vector<Array> keep;
    const auto host = [&](const py::object& obj, const std::vector<std::size_t>& shape,
                          const char* name) -> const float* {
      if (obj.is_none()) return nullptr;
      keep.push_back(host_array<Array>(obj, name));
      check_shape(keep.back(), shape, name);
      return keep.back().data();
    };
    a.router_weights = host(weights.router, {E, H}, "router_weights");
    a.router_bias = host(weights.router_bias, {E}, "router_bias");
    a.router_correction_bias = host(weights.router_correction_bias, {E}, "router_correction_bias");
    a.expert_w13 = host(weights.w13, {E, 2 * I, H}, "w13");
    a.expert_w2 = host(weights.w2, {E, H, I}, "w2");
    if (!weights.d_w13.is_none()) a.d_expert_w13 = device_pointer(weights.d_w13, E * 2 * I * H, "d_w13");
    if (!weights.d_w2.is_none()) a.d_expert_w2 = device_pointer(weights.d_w2, E * H * I, "d_w2");
    Array y({static_cast<py::ssize_t>(tokens), static_cast<py::ssize_t>(info_.hidden_size)});
    tdmsim_forward_result r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    callback_error_.reset();
    const tdmsim_status s = tdmsim_moe_forward(moe_.get(), &a, y.mutable_data(), y.size(), &r);
    if (callback_error_) {
      auto e = std::move(*callback_error_);
      callback_error_.reset();
      e.restore();
      throw py::error_already_set();
    }
    raise_status(s);
    py::dict res;
    res["requested"] = tdmsim_backend_name(static_cast<tdmsim_backend>(r.requested));
    res["ran"] = tdmsim_backend_name(static_cast<tdmsim_backend>(r.ran));
    res["fell_back"] = r.fell_back != 0;
    res["message"] = std::string(r.message);
    res["kernel_stages"] = r.kernel_stages;
    res["block_m"] = r.block_m;
    res["descriptors"] = r.descriptors;
    res["descriptor_bytes"] = r.descriptor_bytes;
    res["emulate_wall_s"] = r.emulate_wall_s;
    if (r.has_timing) {
      py::dict timing;
      timing["software"] = path_dict(r.software);
      if (r.tdm.simulated) timing["tdm"] = path_dict(r.tdm);
      const char* json = nullptr;
      raise_status(tdmsim_moe_last_timing_json(moe_.get(), &json));
      timing["paths"] = json_loads(json);
      res["timing"] = timing;
    }
    return py::make_tuple(y, res);
  }

  py::tuple expert_weights(std::uint32_t e) const {
    const py::ssize_t H = info_.hidden_size, I = info_.intermediate_size;
    Array gate_up({2 * I, H}), down({H, I});
    raise_status(tdmsim_moe_expert_weights(moe_.get(), e, gate_up.mutable_data(), down.mutable_data()));
    return py::make_tuple(gate_up, down);
  }

  std::uint64_t launches() const {
    std::uint64_t n = 0;
    raise_status(tdmsim_stream_launches(stream_.get(), &n));
    return n;
  }

 private:
  // The C routing callback: calls the Python function; a Python exception is
  // kept and re-raised after forward returns (it never unwinds through C).
  static int route(std::uint32_t token, const float* x_row, std::uint32_t hidden, std::uint32_t top_k,
                   std::uint32_t* ids, float* weights, void* user_data) {
    auto* self = static_cast<Descriptor*>(user_data);
    try {
      const Array row({static_cast<py::ssize_t>(hidden)}, x_row);
      const py::tuple out = (*self->routing_)(token, row);
      const IdArray got_ids = id_array(out[0], "the routing function's ids");
      const auto got_w = out[1].cast<Array>();
      if (static_cast<std::uint32_t>(got_ids.size()) != top_k || static_cast<std::uint32_t>(got_w.size()) != top_k) {
        throw py::value_error(fmt::format("routing function returned {} ids and {} weights for token {}; "
                                          "expected {} each", got_ids.size(), got_w.size(), token, top_k));
      }
      std::memcpy(ids, got_ids.data(), top_k * sizeof *ids);
      std::memcpy(weights, got_w.data(), top_k * sizeof *weights);
      return 0;
    } catch (py::error_already_set& e) {
      self->callback_error_ = std::move(e);
    } catch (const py::builtin_exception& e) {
      e.set_error();
      self->callback_error_ = py::error_already_set();
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      self->callback_error_ = py::error_already_set();
    }
    return 1;
  }

  struct MoeDeleter {
    void operator()(tdmsim_moe_t h) const { tdmsim_moe_descriptor_destroy(h); }
  };
  struct StreamDeleter {
    void operator()(tdmsim_stream_t s) const { tdmsim_stream_destroy(s); }
  };
  std::unique_ptr<tdmsim_moe_s, MoeDeleter> moe_;
  std::unique_ptr<tdmsim_stream_s, StreamDeleter> stream_;
  tdmsim_moe_info info_{};
  std::optional<py::function> routing_;
  std::optional<py::error_already_set> callback_error_;
};

py::dict capabilities() {
  tdmsim_capabilities c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  raise_status(tdmsim_get_capabilities(&c));
  py::list backends, policies;
  for (const auto b : {TDMSIM_BACKEND_EMULATE, TDMSIM_BACKEND_SIMULATE, TDMSIM_BACKEND_GPU}) {
    if (c.backends & (1u << b)) backends.append(tdmsim_backend_name(b));
  }
  for (const auto p : config::enum_names<TdmPolicy>()) {
    if (c.policies & (1u << static_cast<unsigned>(*config::enum_from_name<TdmPolicy>(p)))) policies.append(p);
  }
  py::dict d;
  d["api_version"] = c.api_version;
  d["backends"] = backends;
  d["policies"] = policies;
  d["descriptor_format_version"] = c.descriptor_format_version;
  d["max_experts"] = c.max_experts;
  d["max_experts_per_token"] = c.max_experts_per_token;
  d["max_tokens"] = c.max_tokens;
  d["max_hidden"] = c.max_hidden;
  d["custom_routing"] = c.custom_routing != 0;
  d["precomputed_routing"] = c.precomputed_routing != 0;
  return d;
}

// `tdmsim run SCENARIO [--path P] [--machine M]`'s summary: {"layer", "paths"}.
py::object run(const std::string& scenario, std::optional<std::string> path, std::optional<std::string> machine) {
  if (path && *path != "software" && *path != "tdm" && *path != "both") {
    throw py::value_error(fmt::format("path '{}': one of software, tdm, both", *path));
  }
  check_text(scenario, "scenario");
  check_machine(machine);
  const std::string json = translated([&] {
    const config::Loader loader(config::default_roots());
    const config::ResolvedScenario sc = machine ? loader.resolve_scenario(scenario, *machine)
                                                : loader.resolve_scenario(scenario);
    // A request stream is many layers, with no {layer, paths} summary.
    cli::serving::refuse_serving(sc, "tdmsim.run()");
    const std::string p = path.value_or(std::string(config::enum_name(sc.scenario.spec.path)));
    const std::vector<std::string> paths = cli::paths_for(sc.machine.spec, p);
    if (paths.empty()) {
      throw sim::NotSimulatable(fmt::format("path tdm: machine {} ({}) has no tdm: section (no TDM MoE unit); "
                                            "use path software or both, or a TDM machine such as mi500x-tdm",
                                            sc.machine.spec.name, sc.machine.file.string()));
    }
    cli::check_layer_memory(sc, static_cast<std::uint32_t>(paths.size()), false);
    return cli::simulate_layer(sc, paths).dump();
  });
  return json_loads(json);
}

// tdmsim.read_sweep, defined in the module's namespace at import.
constexpr const char* kReadSweep = R"PY(
def read_sweep(path, journal=False, as_numpy=False):
    """The results of `tdmsim sweep` (docs/sweeps.md "Outputs").

    path: the sweep's output folder, or its results.csv / results.jsonl.
    Returns results.csv's rows as dicts (one per point and path; numbers as
    int or float, empty cells as None), or with journal=True results.jsonl's
    rows (inputs, layer, metrics, ... as nested dicts). A torn last line and
    the rows of a point the sweep had not finished are left out, as `tdmsim
    sweep` itself drops them when it resumes; any other malformed line raises
    ValueError naming it. as_numpy=True (table only)
    returns {column: numpy array} instead: float64 where every cell is a
    number or empty (NaN), else an object array.
    """
    import csv, io, json, os, stat
    path = os.fspath(path)  # a str or a pathlib.Path
    if "\0" in path:
        raise ValueError("path holds a NUL character")
    if os.path.isdir(path):
        path = os.path.join(path, "results.jsonl" if journal else "results.csv")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no sweep results (run tdmsim sweep ... --output DIR)")
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError(f"{path}: is not a regular file (a sweep's results.csv or results.jsonl)")
    if not (path.endswith(".csv") or path.endswith(".jsonl")):
        raise ValueError(f"{path}: not a sweep's results.csv or results.jsonl")
    if journal and not path.endswith(".jsonl"):
        raise ValueError(f"{path}: journal=True reads results.jsonl, not a table")

    def lines_of(f):
        # Every line with its number, and whether it is the file's last: only
        # the last may be torn (a sweep stopped mid-write).
        lines = f.readlines()
        return [(i + 1, line, i + 1 == len(lines)) for i, line in enumerate(lines)]

    if path.endswith(".jsonl"):
        if as_numpy:
            raise ValueError("as_numpy reads results.csv (the table), not the journal")
        rows = []
        with open(path, encoding="utf-8") as f:
            for number, line, last in lines_of(f):
                try:
                    row = json.loads(line)
                except ValueError:
                    if last:
                        continue  # a torn last line
                    raise ValueError(f"{path}:{number}: not a JSON line of a sweep journal") from None
                if not (isinstance(row, dict) and "point" in row and "rows_in_point" in row):
                    raise ValueError(f"{path}:{number}: not a row of a sweep journal (no point, rows_in_point)")
                rows.append(row)
        count = {}
        for r in rows:
            count[r["point"]] = count.get(r["point"], 0) + 1
        done = [r for r in rows if count[r["point"]] == r["rows_in_point"]]
        order = {id(r): i for i, r in enumerate(done)}
        return sorted(done, key=lambda r: (r["point"], order[id(r)]))

    def number(text):
        if text == "":
            return None
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        return text

    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    table = list(csv.reader(io.StringIO(text)))
    if not table:
        return {} if as_numpy else []
    if len(table) > 1 and not text.endswith("\n"):
        table = table[:-1]  # a torn last row, whatever its field count
    for i, r in enumerate(table[1:], start=2):
        if len(r) != len(table[0]):
            raise ValueError(f"{path}:{i}: row has {len(r)} fields, the header {len(table[0])}")
    header, body = table[0], [r for r in table[1:] if len(r) == len(table[0])]
    rows = [{k: number(v) for k, v in zip(header, r)} for r in body]
    if not as_numpy:
        return rows
    import numpy as np
    out = {}
    for k in header:
        cells = [r[k] for r in rows]
        if all(c is None or (isinstance(c, (int, float)) and not isinstance(c, bool)) for c in cells):
            out[k] = np.array([np.nan if c is None else c for c in cells], dtype=np.float64)
        else:
            out[k] = np.array(cells, dtype=object)
    return out
)PY";

}  // namespace

PYBIND11_MODULE(tdmsim, m) {
  m.doc() = "tdmsim: MoE layers on an emulator and a GPU timing model, with and without a TDM MoE unit "
            "(docs/api.md)";
  m.attr("__version__") = TDMSIM_VERSION;
  static py::exception<std::runtime_error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<std::runtime_error> config_error(m, "ConfigError", error.ptr());
  g_error = error.ptr();
  g_config_error = config_error.ptr();

  m.def("load", [](const std::string& file, bool origin) {
          check_text(file, "file");
          return json_loads(translated([&] { return cli::resolved_json(file, origin); }));
        },
        py::arg("file"), py::arg("origin") = false,
        "A machine, model, scenario, sweep or kernel-profile YAML fully resolved, as a dict "
        "(`tdmsim config show FILE --format json`). Raises ConfigError with the CLI's message.");
  m.def("validate", [](const std::vector<std::string>& files) {
          for (const auto& f : files) check_text(f, "files");
          for (const auto& f : files) {
            translated([&] {
              (void)cli::resolved_json(f, false);
              // What `config validate` checks beyond loading: a scenario's
              // kernels fit on a CU, a sweep's every point runs, ...
              const config::SpecKind kind = config::Loader(config::default_roots()).kind_of(f);
              if (kind == config::SpecKind::scenario || kind == config::SpecKind::sweep ||
                  kind == config::SpecKind::tenants) {
                try {
                  cli::check_runnable_file(f);
                } catch (const cli::BadInput& e) {
                  // As `config validate` prints it: the file named where the message does not.
                  const std::string what = e.what();
                  if (what.find(f) != std::string::npos) throw;
                  throw cli::BadInput(f + ": " + what);
                }
              }
            });
          }
        },
        py::arg("files"),
        "Raises ConfigError for the first invalid file, with every check of `tdmsim config validate`.");
  m.def("run", &run, py::arg("scenario"), py::arg("path") = py::none(), py::arg("machine") = py::none(),
        "Simulates a scenario on one or both paths: summary.json's {'layer', 'paths'} as dicts.");
  m.def("capabilities", &capabilities, "What this build runs (tdmsim_get_capabilities).");
  m.def("as_float32",
        [](const py::object& obj) {
          if (obj.is_none()) throw py::value_error("array is None");
          return host_array<Array>(obj, "array");
        },
        py::arg("array"),
        "The float32 array forward reads for `array` (a NumPy array, a buffer, an object with "
        "__array_interface__, __array__ or __dlpack__, e.g. a CPU torch tensor): the same memory "
        "when it is float32 and C-contiguous, else a converted copy.");
  // read_sweep: plain Python over the csv and json modules (docs/api.md "Python").
  py::exec(kReadSweep, m.attr("__dict__"));
  m.def("get_capabilities", &capabilities, "Seed 000's name for capabilities().");

  py::class_<Descriptor>(m, "Descriptor")
      .def(py::init<const std::string&, const std::string&, std::optional<std::string>, std::uint32_t,
                    std::uint32_t, std::uint32_t, std::uint32_t, std::uint64_t>(),
           py::arg("scenario"), py::arg("policy") = "load_balance", py::arg("machine") = py::none(),
           py::arg("num_experts") = 0, py::arg("experts_per_token") = 0, py::arg("hidden_size") = 0,
           py::arg("intermediate_size") = 0, py::arg("seed") = 0)
      .def_property_readonly("info", &Descriptor::info)
      .def_property_readonly("launches", &Descriptor::launches)
      .def("set_routing", &Descriptor::set_routing, py::arg("fn"),
           "fn(token, x_row) -> (ids, weights) for every token; None clears it.")
      .def("forward",
           [](Descriptor& d, const py::object& x, const std::string& backend, bool allow_fallback,
              const py::object& topk_ids, const py::object& topk_weights, const py::object& router_weights,
              const py::object& router_bias, const py::object& router_correction_bias, const py::object& w13,
              const py::object& w2, const py::object& d_w13, const py::object& d_w2) {
             return d.forward(x, backend, allow_fallback, topk_ids, topk_weights,
                              {router_weights, router_bias, router_correction_bias, w13, w2, d_w13, d_w2});
           },
           py::arg("x"), py::arg("backend") = "emulate", py::arg("allow_fallback") = true,
           py::arg("topk_ids") = py::none(), py::arg("topk_weights") = py::none(),
           py::arg("router_weights") = py::none(), py::arg("router_bias") = py::none(),
           py::arg("router_correction_bias") = py::none(), py::arg("w13") = py::none(),
           py::arg("w2") = py::none(), py::arg("d_w13") = py::none(), py::arg("d_w2") = py::none(),
           "(y, result) for x [tokens, hidden]; weights as in tdmsim_forward_args (None: the seed's).")
      .def("expert_weights", &Descriptor::expert_weights, py::arg("expert"),
           "(gate_up [2I, H], down [H, I]) of a routed expert, as the backends use them.");

  m.def("create_descriptor",
        [](const std::string& scenario, std::uint32_t num_experts, std::uint32_t experts_per_token,
           const std::string& policy, std::optional<std::string> machine) {
          return Descriptor(scenario, policy, std::move(machine), num_experts, experts_per_token, 0, 0, 0);
        },
        py::arg("scenario"), py::arg("num_experts") = 0, py::arg("experts_per_token") = 0,
        py::arg("policy") = "load_balance", py::arg("machine") = py::none(),
        "Seed 000's create_descriptor: a Descriptor bound to a stream of its own.");
  m.def("forward",
        [](const py::object& x, Descriptor& d, const std::string& backend, bool allow_fallback) {
          return d.forward(x, backend, allow_fallback, py::none(), py::none(), {});
        },
        py::arg("x"), py::arg("descriptor"), py::arg("backend") = "emulate", py::arg("allow_fallback") = true,
        "Seed 000's forward(x, descriptor): (y, result).");
}
