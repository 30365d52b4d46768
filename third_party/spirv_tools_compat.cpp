// What forky's prebuilt libSPIRV-Tools.a (third_party/bootstrap.sh) needs beyond Debian 12's C and C++
// libraries, compiled in only where they lack it (third_party/deps.cmake checks):
//   - glibc 2.38's C23 strtol family (__isoc23_*): the C23 versions also accept a "0b" prefix for base 0
//     or 2, which SPIR-V's text never uses; the library calls them from its assembler's number parser;
//   - GCC 13's std::ios_base_library_init(), which every object including <iostream> references so that
//     the library's iostreams objects get initialised: here the ios_base::Init object below does that.
#include <cstdlib>
#include <ios>

#ifdef HELIOS_NEED_ISOC23_STRTOL
extern "C" long long __isoc23_strtoll(const char* s, char** end, int base) {
  return std::strtoll(s, end, base);
}
extern "C" unsigned long __isoc23_strtoul(const char* s, char** end, int base) {
  return std::strtoul(s, end, base);
}
extern "C" unsigned long long __isoc23_strtoull(const char* s, char** end, int base) {
  return std::strtoull(s, end, base);
}
#endif

#ifdef HELIOS_NEED_IOS_BASE_LIBRARY_INIT
namespace {
const std::ios_base::Init kIostreams;
}
namespace std {
void ios_base_library_init() {}
} // namespace std
#endif
