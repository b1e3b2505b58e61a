#pragma once
// Included by the sources compiled once per ISA (CMakeLists.txt: GPEN_ISA_SOURCES): names the
// namespace their definitions go into, so the copies never collide at link time. The baseline
// copy is the ordinary build of the file; the AVX-512 copy is the same file compiled again with
// -mavx512f/bw/dq/vl and GPEN_ISA_AVX512=1.
#if GPEN_ISA_AVX512
#define GPEN_ISA_NS isa_avx512
#else
#define GPEN_ISA_NS isa_base
#endif
