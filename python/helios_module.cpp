// The Python module `helios`: NumPy arrays in and out over the public C++ API (include/helios/).
//   helios.devices() -> [dict]            helios.device() -> dict of the device in use
//   helios.matmul(a, b, transpose_a=False, transpose_b=False) -> ndarray (float32 or float16, as a and b)
//   helios.attention(q, k, v, causal=False, scale=0.0) -> ndarray (as q)
//   helios.train({"preset": "tiny", "steps": 20, "data": "text.txt", ...}) -> {"loss": [...], ...}
#include <helios/helios.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>

namespace py = pybind11;

namespace {

// The device the module's calls run on: opened on first use (HELIOS_DEVICE or the best one), or chosen with
// helios.use_device(); closed at interpreter exit, before static destructors run.
std::optional<helios::Device>& deviceSlot() {
  static std::optional<helios::Device> device;
  return device;
}

const helios::Device& currentDevice() {
  auto& slot = deviceSlot();
  if (!slot) slot = helios::Device::open();
  return *slot;
}

py::dict infoDict(const helios::DeviceInfo& d) {
  py::dict out;
  out["index"] = d.index;
  out["name"] = d.name;
  out["type"] = d.type;
  out["vendor_id"] = d.vendorId;
  out["device_id"] = d.deviceId;
  out["driver"] = d.driver;
  out["api_version"] = d.apiVersion;
  out["subgroup_size"] = d.subgroupSize;
  out["coop_shape"] = d.coopShape;
  return out;
}

bool isHalf(const py::array& a) {
  return a.dtype().is(py::dtype("float16"));
}

// A C-contiguous float32 or float16 copy of `a` on the device (other dtypes are refused, not converted).
helios::Tensor toTensor(const py::array& given, const char* name) {
  const bool half = isHalf(given);
  if (!half && !given.dtype().is(py::dtype::of<float>()))
    throw py::type_error(std::string("helios: ") + name + " must be a float32 or float16 array, not " +
                         std::string(py::str(given.dtype())));
  const py::array a = py::array::ensure(given, py::array::c_style);
  std::vector<uint64_t> shape(a.shape(), a.shape() + a.ndim());
  const helios::DType dtype = half ? helios::DType::F16 : helios::DType::F32;
  return helios::Tensor::fromBytes(currentDevice(), shape, dtype, a.data(), static_cast<size_t>(a.nbytes()));
}

py::array toArray(const helios::Tensor& t) {
  const py::dtype dtype = t.dtype() == helios::DType::F16 ? py::dtype("float16") : py::dtype::of<float>();
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(dtype, shape);
  t.read(out.mutable_data(), static_cast<size_t>(t.bytes()));
  return out;
}

py::array matmul(const py::array& a, const py::array& b, bool transposeA, bool transposeB) {
  const helios::Tensor ta = toTensor(a, "a"), tb = toTensor(b, "b");
  helios::MatmulOptions o;
  o.transposeA = transposeA;
  o.transposeB = transposeB;
  o.outType = ta.dtype();
  std::optional<helios::Tensor> c;
  {
    py::gil_scoped_release release;
    c = helios::matmul(ta, tb, o);
  }
  return toArray(*c);
}

py::array attention(const py::array& q, const py::array& k, const py::array& v, bool causal, float scale) {
  // The f32 kernels run the op; float16 arrays are widened here and the result rounded back.
  const py::dtype f32 = py::dtype::of<float>();
  auto widen = [&](const py::array& x) { return isHalf(x) ? py::array(x.attr("astype")(f32)) : x; };
  const helios::Tensor tq = toTensor(widen(q), "q"), tk = toTensor(widen(k), "k"),
                       tv = toTensor(widen(v), "v");
  std::optional<helios::Tensor> o;
  {
    py::gil_scoped_release release;
    o = helios::attention(tq, tk, tv, {causal, scale});
  }
  py::array out = toArray(*o);
  return isHalf(q) ? py::array(out.attr("astype")(q.dtype())) : out;
}

py::dict metricsDict(const helios::StepMetrics& m) {
  py::dict d;
  d["step"] = m.step;
  d["loss"] = m.loss;
  d["grad_norm"] = m.gradNorm;
  d["lr"] = m.lr;
  d["skipped"] = m.skipped;
  d["ms"] = m.ms;
  d["val_loss"] = m.valLoss ? py::cast(*m.valLoss) : py::none();
  return d;
}

// config: {"preset": ..., "out_dir": ...} plus helios-train's config.json keys (steps, data, batch, ...).
py::dict train(py::dict config) {
  config = py::dict(config); // a copy: the caller's dict keeps its keys
  helios::TrainConfig c;
  if (config.contains("preset")) c.preset = py::str(config.attr("pop")("preset"));
  if (config.contains("out_dir")) c.outDir = py::str(config.attr("pop")("out_dir"));
  c.overrides = py::str(py::module_::import("json").attr("dumps")(config));
  const helios::Device& device = currentDevice();
  std::optional<helios::TrainResult> r;
  {
    py::gil_scoped_release release;
    r = helios::train(device, c);
  }
  py::list steps, loss;
  for (const auto& m : r->steps) {
    steps.append(metricsDict(m));
    loss.append(m.loss);
  }
  py::dict out;
  out["steps"] = steps;
  out["loss"] = loss;
  out["parameters"] = r->parameters;
  out["model"] = r->model;
  out["data"] = r->data;
  out["config"] = py::module_::import("json").attr("loads")(r->config);
  return out;
}

} // namespace

PYBIND11_MODULE(helios, m) {
  m.doc() = "Helios: a Vulkan compute engine that writes its own SPIR-V kernels (NumPy in, NumPy out)";
  m.def(
      "devices",
      [] {
        py::list out;
        for (const auto& d : helios::devices())
          out.append(infoDict(d));
        return out;
      },
      "Every Vulkan device on this machine, as dicts");
  m.def(
      "use_device", [](const std::string& select) { deviceSlot() = helios::Device::open({select}); },
      py::arg("select"), "Open the device the next calls run on: an index or a name substring");
  m.def(
      "device", [] { return infoDict(currentDevice().info()); }, "The device in use");
  m.def(
      "coop_self_test", [] { return currentDevice().coopSelfTest().describe(); },
      "The cooperative-matrix self-test's result on the device in use");
  m.def("matmul", &matmul, py::arg("a"), py::arg("b"), py::arg("transpose_a") = false,
        py::arg("transpose_b") = false, "a @ b on the GPU (2-D, or 3-D batches)");
  m.def("attention", &attention, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal") = false,
        py::arg("scale") = 0.0f, "softmax(scale q k^T) v for q, k, v of shape [batch, heads, tokens, dim]");
  m.def("train", &train, py::arg("config"), "Train as helios-train does; returns the metrics");
  py::module_::import("atexit").attr("register")(py::cpp_function([] { deviceSlot().reset(); }));
}
