// LD_PRELOAD shim that makes a process see an AVX2-only CPU on an AVX-512 machine, so the AVX2
// target of issue 16 can be measured here against peers whose kernels pick their ISA from CPUID
// themselves (ONNX Runtime's MLAS, OpenVINO's oneDNN). It turns on CPUID faulting (Linux
// ARCH_SET_CPUID; the CPU must list `cpuid_fault`), answers each trapped CPUID from the real one
// with the AVX-512 (and AMX, AVX-VNNI) feature bits cleared, and leaves everything else alone.
// Limits, said in docs/benchmarks.md: code that read CPUID before this library's constructor
// (the dynamic loader's own string functions) keeps its choice, and the core still runs at the
// frequency and with the caches of the AVX-512 part, so it is an AVX2 code path, not an AVX2 chip.
// Build: cc -O2 -shared -fPIC -o avx2_only.so bench/avx2_only.c
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static struct sigaction previous;

static long set_cpuid_enabled(int on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on); }

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  if (leaf == 7 && sub == 0) {
    // EBX: AVX512 F, DQ, IFMA, PF, ER, CD, BW, VL.
    r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) |
              (1u << 31));
    // ECX: AVX512 VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ.
    r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    // EDX: AVX512 4VNNIW, 4FMAPS, VP2INTERSECT, FP16; AMX BF16, TILE, INT8.
    r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  } else if (leaf == 7 && sub == 1) {
    r[0] &= ~((1u << 4) | (1u << 5));  // AVX-VNNI, AVX512 BF16
  }
}

static void on_segv(int sig, siginfo_t* info, void* ctx_) {
  ucontext_t* ctx = (ucontext_t*)ctx_;
  greg_t* g = ctx->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)g[REG_RIP];
  if (ip[0] == 0x0f && ip[1] == 0xa2) {
    uint32_t r[4];
    const uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX];
    set_cpuid_enabled(1);
    real_cpuid(leaf, sub, r);
    set_cpuid_enabled(0);
    mask(leaf, sub, r);
    g[REG_RAX] = r[0];
    g[REG_RBX] = r[1];
    g[REG_RCX] = r[2];
    g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
    return;
  }
  // A real fault: hand it to whoever had SIGSEGV before, or die of it as the process would have.
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, ctx_);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  } else {
    signal(SIGSEGV, SIG_DFL);
  }
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &previous) != 0 || set_cpuid_enabled(0) != 0) {
    fprintf(stderr, "avx2_only.so: CPUID faulting is not available here (needs cpuid_fault in /proc/cpuinfo)\n");
    _exit(2);
  }
}
