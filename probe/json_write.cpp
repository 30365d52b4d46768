// DeviceCaps -> JSON (the `helios-probe --json` form).
#include "probe/json.hpp"
#include "probe/scoring.hpp"

namespace helios::probe {

namespace {

nlohmann::json coopToJson(const CoopMatrixProperty& p) {
  return {{"M", p.M},        {"N", p.N}, {"K", p.K},           {"A", p.A},
          {"B", p.B},        {"C", p.C}, {"Result", p.Result}, {"saturating", p.saturating},
          {"scope", p.scope}};
}

nlohmann::json flexToJson(const FlexibleDimensionsProperty& p) {
  return {{"MGranularity", p.MGranularity},
          {"NGranularity", p.NGranularity},
          {"KGranularity", p.KGranularity},
          {"A", p.A},
          {"B", p.B},
          {"C", p.C},
          {"Result", p.Result},
          {"saturatingAccumulation", p.saturatingAccumulation},
          {"scope", p.scope},
          {"workgroupInvocations", p.workgroupInvocations}};
}

} // namespace

nlohmann::json toJson(const DeviceCaps& c) {
  nlohmann::json d;
  d["name"] = c.name;
  d["vendor_id"] = hexId(c.vendor_id);
  d["device_id"] = hexId(c.device_id);
  d["device_type"] = std::string(deviceTypeName(c.type));
  d["driver"] = c.driver;
  d["driver_name"] = c.driver_name;
  d["driver_info"] = c.driver_info;
  d["driver_version"] = c.driver_version;
  d["driver_version_raw"] = c.driver_version_raw;
  d["api_version"] = c.api_version;
  d["subgroup_size"] = c.subgroup_size;
  d["min_subgroup_size"] = c.min_subgroup_size;
  d["max_subgroup_size"] = c.max_subgroup_size;
  d["max_compute_shared_memory_size"] = c.max_compute_shared_memory;
  d["max_workgroup_size"] = c.max_workgroup_size;
  d["max_workgroup_invocations"] = c.max_workgroup_invocations;
  d["extensions"] = c.extensions;
  d["shader_float16"] = c.shader_float16;
  d["storage_buffer_16bit"] = c.storage_buffer_16bit;
  d["coop_khr"] = nlohmann::json::array();
  for (const auto& p : c.coop_khr)
    d["coop_khr"].push_back(coopToJson(p));
  d["coop_nv2"] = nlohmann::json::array();
  for (const auto& p : c.coop_nv2)
    d["coop_nv2"].push_back(flexToJson(p));
  const CoopMatrix2Features& f = c.coop_nv2_features;
  if (f.known)
    d["coop_nv2_features"] = {{"workgroup_scope", f.workgroupScope},
                              {"flexible_dimensions", f.flexibleDimensions},
                              {"reductions", f.reductions},
                              {"conversions", f.conversions},
                              {"per_element_operations", f.perElementOperations},
                              {"tensor_addressing", f.tensorAddressing},
                              {"block_loads", f.blockLoads}};
  const ShaderBFloat16& b = c.shader_bfloat16;
  if (b.known)
    d["shader_bfloat16"] = {
        {"type", b.type}, {"dot_product", b.dotProduct}, {"cooperative_matrix", b.cooperativeMatrix}};
  const ShaderCores& sc = c.shader_cores;
  if (sc.known()) {
    d["shader_cores"] = {{"source", sc.source},
                         {"compute_units", sc.computeUnits},
                         {"subgroups_per_unit", sc.subgroupsPerUnit}};
    if (sc.shaderEngines)
      d["shader_cores"].update({{"shader_engines", sc.shaderEngines},
                                {"arrays_per_engine", sc.arraysPerEngine},
                                {"units_per_array", sc.unitsPerArray},
                                {"simd_per_unit", sc.simdPerUnit},
                                {"wavefronts_per_simd", sc.wavefrontsPerSimd}});
  }
  if (!c.device_uuid.empty()) d["device_uuid"] = c.device_uuid;
  d["coop_self_test"] = {{"status", std::string(selfTestStatusName(c.coop_self_test.status))},
                         {"cached", c.coop_self_test.cached},
                         {"failure", c.coop_self_test.failure}};
  if (auto best = bestF16F32(c.coop_khr))
    d["best_f16_f32"] = {{"M", best->M}, {"N", best->N}, {"K", best->K}, {"score", best->score}};
  else
    d["best_f16_f32"] = nullptr;
  d["best_f16_f32_reason"] = explainChoice(c.coop_khr);
  if (auto best = bestBF16F32(c.coop_khr))
    d["best_bf16_f32"] = {{"M", best->M}, {"N", best->N}, {"K", best->K}, {"score", best->score}};
  else
    d["best_bf16_f32"] = nullptr;
  d["best_bf16_f32_reason"] = explainChoice(c.coop_khr, CoopInputs::BF16);
  d["bf16_gemm_path"] = bf16GemmPath(c);
  if (!c.source.empty()) d["source"] = c.source;
  return d;
}

nlohmann::json toJson(const std::vector<DeviceCaps>& devices) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : devices)
    list.push_back(toJson(d));
  return {{"devices", list}};
}

} // namespace helios::probe
