/* A process that sees other data caches in CPUID leaf 4 (Intel's deterministic cache parameters), or no
 * AVX-512, for the tests that show which library reads them (tests/extractors/test_cpu_caches.py) and what a CPU
 * without AVX-512 computes (tests/stage1/test_goldens.py); loaded with LD_PRELOAD.
 *
 * TEST_CPU_CACHES="L1=32768,L2=524288" (bytes a core, one core sharing each); TEST_CPU_NO_AVX512=1 clears every
 * AVX-512 flag of leaf 7, as on a CPU with AVX2 and FMA only (AMD Zen 3). The kernel's CPUID faulting
 * (arch_prctl ARCH_SET_CPUID; CPU flag cpuid_fault) turns every CPUID instruction into SIGSEGV; the handler
 * runs the real instruction with faulting briefly off, rewrites the sizes asked for, and steps over it.
 * Exits 97 at start where the kernel or CPU has no CPUID faulting. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <asm/prctl.h>
#include <cpuid.h>

static uint32_t wanted[4];  /* bytes a core for cache levels 1..3; 0 = as the CPU says */
static int no_avx512;

static void set_faulting(int on) { syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    set_faulting(0);
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
    set_faulting(1);
}

static void rewrite_leaf4(uint32_t r[4]) {
    uint32_t type = r[0] & 0x1f, level = (r[0] >> 5) & 0x7;
    if (type != 1 && type != 3) return;           /* data or unified caches only */
    if (level < 1 || level > 3 || !wanted[level]) return;
    uint32_t ways = ((r[1] >> 22) & 0x3ff) + 1, parts = ((r[1] >> 12) & 0x3ff) + 1, line = (r[1] & 0xfff) + 1;
    while (ways > 1 && wanted[level] % (ways * parts * line)) ways--;  /* whole sets */
    r[0] &= ~(0xfffu << 14);                      /* one core shares it */
    r[1] = (r[1] & ~(0x3ffu << 22)) | ((ways - 1) << 22);
    r[2] = wanted[level] / (ways * parts * line) - 1;
}

/* Leaf 7, subleaf 0: AVX-512 F, DQ, IFMA, PF, ER, CD, BW, VL in EBX; VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ in
 * ECX; 4VNNIW, 4FMAPS, VP2INTERSECT, FP16 in EDX. */
static void hide_avx512(uint32_t r[4]) {
    r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31));
    r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 23));
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    ucontext_t *uc = context;
    greg_t *g = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    if (ip[0] != 0x0f || ip[1] != 0xa2) {          /* a real fault: die of it */
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX], r[4];
    real_cpuid(leaf, sub, r);
    if (leaf == 4) rewrite_leaf4(r);
    if (leaf == 7 && sub == 0 && no_avx512) hide_avx512(r);
    g[REG_RAX] = r[0]; g[REG_RBX] = r[1]; g[REG_RCX] = r[2]; g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
    (void)sig; (void)info;
}

__attribute__((constructor)) static void start(void) {
    const char *spec = getenv("TEST_CPU_CACHES"), *hide = getenv("TEST_CPU_NO_AVX512");
    no_avx512 = hide && strcmp(hide, "1") == 0;
    if (!spec && !no_avx512) return;
    char buf[256] = "";
    if (spec) strncpy(buf, spec, sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (tok[0] == 'L' && tok[1] >= '1' && tok[1] <= '3' && tok[2] == '=') wanted[tok[1] - '0'] = strtoul(tok + 3, NULL, 10);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) _exit(97);  /* no CPUID faulting here */
}
