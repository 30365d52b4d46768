# Finds Helios' dependencies: system packages where new enough, else the prefix that
# third_party/bootstrap.sh fills (HELIOS_DEPS, default <repo>/.deps). Defines:
#   helios::vulkan_headers  Vulkan headers >= 1.4.313 (VK_KHR_cooperative_matrix, VK_NV_cooperative_matrix2,
#                           VK_KHR_shader_bfloat16)
#   helios::spirv_headers   SPIRV-Headers with SPV_KHR_bfloat16 (spirv.hpp11, GLSL.std.450.h)
#   helios::volk            volk meta-loader, compiled from volk.c
#   helios::spirv_tools     SPIRV-Tools library (validator, disassembler)
#   GLSLANG_VALIDATOR   the GLSL oracles' compiler
#   fmt::fmt, nlohmann_json::nlohmann_json, CLI11::CLI11, Catch2::Catch2WithMain

set(HELIOS_DEPS "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH "Prefix filled by third_party/bootstrap.sh")
set(_hdr "${HELIOS_DEPS}/headers/usr")

# --- Vulkan headers: the newest of the system's and the prefix's, if it knows VK_KHR_shader_bfloat16. ---
function(_helios_vk_header_version dir out)
  set(${out} 0 PARENT_SCOPE)
  if(EXISTS "${dir}/vulkan/vulkan_core.h")
    file(STRINGS "${dir}/vulkan/vulkan_core.h" _bf16 REGEX "^#define VK_KHR_shader_bfloat16 1")
    file(STRINGS "${dir}/vulkan/vulkan_core.h" _line REGEX "^#define VK_HEADER_VERSION [0-9]+")
    string(REGEX MATCH "[0-9]+$" _v "${_line}")
    if(_bf16)
      set(${out} ${_v} PARENT_SCOPE)
    endif()
  endif()
endfunction()
_helios_vk_header_version("/usr/include" _sys_vk)
_helios_vk_header_version("${_hdr}/include" _pfx_vk)
if(_sys_vk GREATER 0 AND _sys_vk GREATER_EQUAL _pfx_vk)
  set(HELIOS_VULKAN_INCLUDE "/usr/include")
elseif(_pfx_vk GREATER 0)
  set(HELIOS_VULKAN_INCLUDE "${_hdr}/include")
else()
  message(FATAL_ERROR "Vulkan headers with VK_KHR_shader_bfloat16 (1.4.313 or newer) not found. "
                      "Run third_party/bootstrap.sh first.")
endif()
message(STATUS "Helios: Vulkan headers from ${HELIOS_VULKAN_INCLUDE}")
add_library(helios_vulkan_headers INTERFACE)
target_include_directories(helios_vulkan_headers SYSTEM INTERFACE "${HELIOS_VULKAN_INCLUDE}")
target_compile_definitions(helios_vulkan_headers INTERFACE VK_NO_PROTOTYPES)
add_library(helios::vulkan_headers ALIAS helios_vulkan_headers)

# --- SPIRV-Headers ---
find_path(HELIOS_SPIRV_HEADERS_INCLUDE spirv/unified1/spirv.hpp11
  HINTS "${_hdr}/include" NO_DEFAULT_PATH)
find_path(HELIOS_SPIRV_HEADERS_INCLUDE spirv/unified1/spirv.hpp11)
if(NOT HELIOS_SPIRV_HEADERS_INCLUDE)
  message(FATAL_ERROR "SPIRV-Headers not found. Run third_party/bootstrap.sh first.")
endif()
add_library(helios_spirv_headers INTERFACE)
target_include_directories(helios_spirv_headers SYSTEM INTERFACE "${HELIOS_SPIRV_HEADERS_INCLUDE}")
add_library(helios::spirv_headers ALIAS helios_spirv_headers)

# --- volk (compiled from its single source file) ---
find_path(HELIOS_VOLK_DIR volk.c HINTS "${_hdr}/include" NO_DEFAULT_PATH)
find_path(HELIOS_VOLK_DIR volk.c PATHS /usr/include /usr/src/volk)
if(NOT HELIOS_VOLK_DIR)
  message(FATAL_ERROR "volk.c not found. Run third_party/bootstrap.sh first.")
endif()
add_library(helios_volk STATIC "${HELIOS_VOLK_DIR}/volk.c")
target_include_directories(helios_volk SYSTEM PUBLIC "${HELIOS_VOLK_DIR}")
target_link_libraries(helios_volk PUBLIC helios::vulkan_headers ${CMAKE_DL_LIBS})
set_target_properties(helios_volk PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(helios::volk ALIAS helios_volk)

# --- SPIRV-Tools (>= 2025.2: its validator knows SPV_KHR_bfloat16): prefix first, then system. ---
find_library(HELIOS_SPIRV_TOOLS_LIB NAMES SPIRV-Tools HINTS "${HELIOS_DEPS}/lib" NO_DEFAULT_PATH)
find_path(HELIOS_SPIRV_TOOLS_INCLUDE spirv-tools/libspirv.hpp HINTS "${HELIOS_DEPS}/include" NO_DEFAULT_PATH)
set(_helios_prebuilt_spirv_tools OFF)
if(HELIOS_SPIRV_TOOLS_LIB)
  set(_helios_prebuilt_spirv_tools ON)
else()
  find_package(SPIRV-Tools 2025.2 QUIET)
  if(TARGET SPIRV-Tools-static)
    set(HELIOS_SPIRV_TOOLS_LIB SPIRV-Tools-static)
  elseif(TARGET SPIRV-Tools)
    set(HELIOS_SPIRV_TOOLS_LIB SPIRV-Tools)
  else()
    message(FATAL_ERROR "SPIRV-Tools >= 2025.2 not found. Run third_party/bootstrap.sh first.")
  endif()
endif()
add_library(helios_spirv_tools INTERFACE)
target_link_libraries(helios_spirv_tools INTERFACE ${HELIOS_SPIRV_TOOLS_LIB})
if(HELIOS_SPIRV_TOOLS_INCLUDE)
  target_include_directories(helios_spirv_tools SYSTEM INTERFACE "${HELIOS_SPIRV_TOOLS_INCLUDE}")
endif()
# The prefix's library is forky's build (bootstrap.sh): where the C and C++ libraries predate it, the few
# symbols it needs beyond them come from third_party/spirv_tools_compat.cpp.
if(_helios_prebuilt_spirv_tools)
  include(CheckFunctionExists)
  include(CheckCXXSourceCompiles)
  check_function_exists(__isoc23_strtoll HELIOS_HAVE_ISOC23_STRTOLL)
  check_cxx_source_compiles("namespace std { void ios_base_library_init(); }
    int main() { std::ios_base_library_init(); }" HELIOS_HAVE_IOS_BASE_LIBRARY_INIT)
  if(NOT HELIOS_HAVE_ISOC23_STRTOLL OR NOT HELIOS_HAVE_IOS_BASE_LIBRARY_INIT)
    add_library(helios_spirv_tools_compat STATIC "${CMAKE_CURRENT_LIST_DIR}/spirv_tools_compat.cpp")
    target_compile_definitions(helios_spirv_tools_compat PRIVATE
      $<$<NOT:$<BOOL:${HELIOS_HAVE_ISOC23_STRTOLL}>>:HELIOS_NEED_ISOC23_STRTOL>
      $<$<NOT:$<BOOL:${HELIOS_HAVE_IOS_BASE_LIBRARY_INIT}>>:HELIOS_NEED_IOS_BASE_LIBRARY_INIT>)
    target_link_libraries(helios_spirv_tools INTERFACE helios_spirv_tools_compat)
  endif()
endif()
add_library(helios::spirv_tools ALIAS helios_spirv_tools)

# --- glslang (only its validator binary: GLSL oracles are compiled at build time) ---
find_program(GLSLANG_VALIDATOR glslangValidator HINTS "${HELIOS_DEPS}/bin" NO_DEFAULT_PATH)
find_program(GLSLANG_VALIDATOR glslangValidator)
if(NOT GLSLANG_VALIDATOR)
  message(FATAL_ERROR "glslangValidator not found. Run third_party/bootstrap.sh first.")
endif()

# --- Ordinary packages (Debian 12 versions are fine) ---
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
# SentencePiece (Debian's libsentencepiece-dev) for the tokenizers in engine/text.
find_package(PkgConfig REQUIRED)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
# Hugging Face tokenizer.json (engine/text/hf): PCRE2 runs the pre-tokenizers' regular expressions, utf8proc
# the Unicode normalizers (Debian's libpcre2-dev, libutf8proc-dev).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
if(HELIOS_BUILD_TESTS)
  find_package(Catch2 3 REQUIRED)
  include(Catch)
endif()
