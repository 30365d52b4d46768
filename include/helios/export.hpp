#pragma once
// HELIOS_API marks what libhelios.so exports; everything else in it (the engine) stays hidden.
#if defined(HELIOS_BUILDING_LIBRARY)
#define HELIOS_API __attribute__((visibility("default")))
#else
#define HELIOS_API
#endif
