// The entry points that GCC's ThreadSanitizer pass (-fsanitize=thread, compile only) calls for
// every load, store and atomic of the emulated kernels. The emulator links no TSan runtime:
// these definitions are the runtime, and they hand the shared-memory accesses of a running
// emulated thread to the checker (checker.cpp). Outside a checked kernel they cost one
// thread-local test. Atomics are performed here (sequentially consistent) and reported as atomic.
#include <cstddef>
#include <cstdint>

namespace cuda_emu::check {
void access(const void* p, size_t n, bool write, bool atomic, const void* ret);
}
extern __thread void* cuda_emu_check_active;

#define CUDA_EMU_RA __builtin_return_address(0)
#define CUDA_EMU_NOTE(p, n, w, at)                                              \
  do {                                                                          \
    if (__builtin_expect(cuda_emu_check_active != nullptr, 0))                  \
      ::cuda_emu::check::access((const void*)(p), (n), (w), (at), CUDA_EMU_RA); \
  } while (0)

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define CUDA_EMU_PLAIN(n)                                                   \
  void __tsan_read##n(void* p) { CUDA_EMU_NOTE(p, n, false, false); }           \
  void __tsan_write##n(void* p) { CUDA_EMU_NOTE(p, n, true, false); }           \
  void __tsan_unaligned_read##n(void* p) { CUDA_EMU_NOTE(p, n, false, false); } \
  void __tsan_unaligned_write##n(void* p) { CUDA_EMU_NOTE(p, n, true, false); } \
  void __tsan_volatile_read##n(void* p) { CUDA_EMU_NOTE(p, n, false, false); }  \
  void __tsan_volatile_write##n(void* p) { CUDA_EMU_NOTE(p, n, true, false); }
CUDA_EMU_PLAIN(1)
CUDA_EMU_PLAIN(2)
CUDA_EMU_PLAIN(4)
CUDA_EMU_PLAIN(8)
CUDA_EMU_PLAIN(16)
void __tsan_read_range(void* p, size_t n) { CUDA_EMU_NOTE(p, n, false, false); }
void __tsan_write_range(void* p, size_t n) { CUDA_EMU_NOTE(p, n, true, false); }

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

#define CUDA_EMU_ATOMIC_RMW(bits, T, op)                                      \
  T __tsan_atomic##bits##_##op(volatile T* a, T v, int) {                    \
    CUDA_EMU_NOTE(a, sizeof(T), true, true);                                 \
    return __atomic_##op((T*)a, v, __ATOMIC_SEQ_CST);                        \
  }
#define CUDA_EMU_ATOMICS(bits, T)                                                                  \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                                         \
    CUDA_EMU_NOTE(a, sizeof(T), false, true);                                                      \
    return __atomic_load_n((T*)a, __ATOMIC_SEQ_CST);                                               \
  }                                                                                                \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                                      \
    CUDA_EMU_NOTE(a, sizeof(T), true, true);                                                       \
    __atomic_store_n((T*)a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                                \
  T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                                      \
    CUDA_EMU_NOTE(a, sizeof(T), true, true);                                                       \
    return __atomic_exchange_n((T*)a, v, __ATOMIC_SEQ_CST);                                        \
  }                                                                                                \
  CUDA_EMU_ATOMIC_RMW(bits, T, fetch_add)                                                          \
  CUDA_EMU_ATOMIC_RMW(bits, T, fetch_sub)                                                          \
  CUDA_EMU_ATOMIC_RMW(bits, T, fetch_and)                                                          \
  CUDA_EMU_ATOMIC_RMW(bits, T, fetch_or)                                                           \
  CUDA_EMU_ATOMIC_RMW(bits, T, fetch_xor)                                                          \
  CUDA_EMU_ATOMIC_RMW(bits, T, fetch_nand)                                                         \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {          \
    CUDA_EMU_NOTE(a, sizeof(T), true, true);                                                       \
    return __atomic_compare_exchange_n((T*)a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
  }                                                                                                \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {            \
    CUDA_EMU_NOTE(a, sizeof(T), true, true);                                                       \
    return __atomic_compare_exchange_n((T*)a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
  }                                                                                                \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                \
    CUDA_EMU_NOTE(a, sizeof(T), true, true);                                                       \
    __atomic_compare_exchange_n((T*)a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
    return c;                                                                                      \
  }
CUDA_EMU_ATOMICS(8, uint8_t)
CUDA_EMU_ATOMICS(16, uint16_t)
CUDA_EMU_ATOMICS(32, uint32_t)
CUDA_EMU_ATOMICS(64, uint64_t)

}  // extern "C"
