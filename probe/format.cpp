#include "probe/format.hpp"

#include "probe/scoring.hpp"
#include "probe/table.hpp"

#include <fmt/format.h>

namespace helios::probe {

namespace {

std::string yesNo(bool b) {
  return b ? "yes" : "no";
}

std::string orUnknown(const std::string& s) {
  return s.empty() ? "(unknown)" : s;
}

std::string computeUnits(const ShaderCores& s) {
  if (!s.known())
    return "not reported (no VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties or "
           "VK_ARM_shader_core_builtins)";
  std::string line = fmt::format("{} ({}", s.computeUnits, s.source);
  if (s.subgroupsPerUnit) line += fmt::format("; {} subgroups each", s.subgroupsPerUnit);
  if (s.shaderEngines)
    line += fmt::format("; {} engines x {} arrays x {} units, {} SIMDs x {} waves", s.shaderEngines,
                        s.arraysPerEngine, s.unitsPerArray, s.simdPerUnit, s.wavefrontsPerSimd);
  return line + ")";
}

std::string summary(const DeviceCaps& c) {
  TextTable t({"", ""});
  t.addRow({"type", std::string(deviceTypeName(c.type))});
  t.addRow({"vendor id / device id", fmt::format("{} / {}", hexId(c.vendor_id), hexId(c.device_id))});
  t.addRow({"driver", orUnknown(c.driver)});
  t.addRow({"driver version", orUnknown(c.driver_version)});
  t.addRow({"api version", orUnknown(c.api_version)});
  t.addRow({"subgroup size",
            fmt::format("{} (min {}, max {})", c.subgroup_size, c.min_subgroup_size, c.max_subgroup_size)});
  t.addRow({"max compute shared memory", fmt::format("{} bytes", c.max_compute_shared_memory)});
  t.addRow({"max workgroup size",
            fmt::format("{} x {} x {} ({} invocations)", c.max_workgroup_size[0], c.max_workgroup_size[1],
                        c.max_workgroup_size[2], c.max_workgroup_invocations)});
  t.addRow({"compute units", computeUnits(c.shader_cores)});
  if (!c.coop_khr.empty()) t.addRow({"coop self-test", describeSelfTest(c.coop_self_test)});
  t.addRow({"shaderFloat16", yesNo(c.shader_float16)});
  t.addRow({"storageBuffer16BitAccess", yesNo(c.storage_buffer_16bit)});
  if (c.shader_bfloat16.known)
    t.addRow({"shaderBFloat16 type / dot / coop",
              fmt::format("{} / {} / {}", yesNo(c.shader_bfloat16.type), yesNo(c.shader_bfloat16.dotProduct),
                          yesNo(c.shader_bfloat16.cooperativeMatrix))});
  if (!c.source.empty()) t.addRow({"source", c.source});
  return t.render("  ");
}

std::string extensions(const DeviceCaps& c) {
  TextTable t({"", ""});
  for (auto ext : kRelevantExtensions)
    t.addRow({std::string(ext), yesNo(c.hasExtension(ext))});
  return "  Extensions\n" + t.render("    ");
}

std::string coopTable(const DeviceCaps& c) {
  std::string head =
      fmt::format("  Cooperative matrix configurations (VK_KHR_cooperative_matrix): {}\n", c.coop_khr.size());
  if (c.coop_khr.empty()) return head;
  TextTable t({"M", "N", "K", "A", "B", "C", "Result", "saturating", "scope"}, {true, true, true});
  for (const auto& p : c.coop_khr)
    t.addRow({std::to_string(p.M), std::to_string(p.N), std::to_string(p.K), p.A, p.B, p.C, p.Result,
              yesNo(p.saturating), p.scope});
  return head + t.render("    ");
}

std::string flexTable(const DeviceCaps& c) {
  std::string head;
  if (c.hasExtension("VK_NV_cooperative_matrix2") && !c.coop_nv2_features.known)
    head = "  VK_NV_cooperative_matrix2 features: not recorded in this capture\n";
  else if (c.hasExtension("VK_NV_cooperative_matrix2")) {
    const CoopMatrix2Features& f = c.coop_nv2_features;
    head = fmt::format("  VK_NV_cooperative_matrix2 features: workgroup scope {}, flexible dimensions {}, "
                       "reductions {}, conversions {}, per-element operations {}, tensor addressing {}, "
                       "block loads {}\n",
                       yesNo(f.workgroupScope), yesNo(f.flexibleDimensions), yesNo(f.reductions),
                       yesNo(f.conversions), yesNo(f.perElementOperations), yesNo(f.tensorAddressing),
                       yesNo(f.blockLoads));
  }
  head += fmt::format("  Flexible dimensions (VK_NV_cooperative_matrix2): {}\n", c.coop_nv2.size());
  if (c.coop_nv2.empty()) return head;
  TextTable t({"MGran", "NGran", "KGran", "A", "B", "C", "Result", "saturating", "scope", "invocations"},
              {true, true, true, false, false, false, false, false, false, true});
  for (const auto& p : c.coop_nv2)
    t.addRow({std::to_string(p.MGranularity), std::to_string(p.NGranularity), std::to_string(p.KGranularity),
              p.A, p.B, p.C, p.Result, yesNo(p.saturatingAccumulation), p.scope,
              std::to_string(p.workgroupInvocations)});
  return head + t.render("    ");
}

std::string choice(const DeviceCaps& c) {
  const auto line = [](const std::optional<CoopShape>& best) {
    return best ? fmt::format("{}x{}x{} (score {})", best->M, best->N, best->K, best->score)
                : std::string("none (tiled fallback)");
  };
  return fmt::format("  Best f16 x f16 -> f32 shape: {}\n    {}\n", line(bestF16F32(c.coop_khr)),
                     explainChoice(c.coop_khr)) +
         fmt::format("  Best bf16 x bf16 -> f32 shape: {}\n    {}\n    {}\n", line(bestBF16F32(c.coop_khr)),
                     explainChoice(c.coop_khr, CoopInputs::BF16), bf16GemmPath(c));
}

} // namespace

std::string formatDevice(const DeviceCaps& c, std::size_t index) {
  return fmt::format("Device {}: {}\n", index, c.name) + summary(c) + extensions(c) + coopTable(c) +
         flexTable(c) + choice(c);
}

std::string formatDevices(const std::vector<DeviceCaps>& devices) {
  std::string out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i) out += "\n";
    out += formatDevice(devices[i], i);
  }
  return out;
}

} // namespace helios::probe
