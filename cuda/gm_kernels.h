/* gm_kernels.h -- the C ABI between csrc/ (the Python extension, C11) and
 * cuda/ (kernels and their extern "C" launchers).
 *
 * One lesson, one stem: cuda/<lesson>.cu holds the kernels of its families,
 * cuda/<lesson>.h their C ABI (included below through a generated list); the
 * runtime's own kernels (cuda/runtime.cu) are declared here.  Every family <f> has exactly two entry points:
 *
 *     cudaError_t gm_<f>(const gm_<f>_params *p, gm_dims *dims, cudaStream_t stream);
 *     const void *gm_<f>_kernel(const gm_<f>_params *p);
 *
 * The launcher picks the launch configuration, writes it to *dims, launches
 * on `stream` and returns cudaGetLastError(); it never synchronizes,
 * allocates or prints (gm_launch in csrc/runtime/launch.c launches it, times
 * it with events and turns errors into Python exceptions).  The kernel selector returns the __global__
 * function the launcher would run for *p -- the launcher itself uses it --
 * for cudaFuncGetAttributes and the occupancy API; NULL for parameters that
 * select no built kernel.  A zeroed params struct selects the default build.
 *
 * Every value that selects a kernel is an enum of these headers.  A family with several
 * variants has `variant` as the first member of its params, and each variant
 * name of csrc's tables stands beside its enum value there (exposed to Python
 * as gpumem.variants()[i].select).  Arguments have been validated by csrc.
 */
#ifndef GM_KERNELS_H
#define GM_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    size_t smem; /* dynamic + static shared memory per block, bytes */
} gm_dims;

#define GM_FAMILY(f)                                                                 \
    cudaError_t gm_##f(const gm_##f##_params *p, gm_dims *dims, cudaStream_t stream); \
    const void *gm_##f##_kernel(const gm_##f##_params *p);

/* ==== the runtime's own kernels (cuda/runtime.cu) ==========================
 * Not lessons: csrc/runtime launches them through gm_launch (internal
 * launches, never in a LaunchRecord). */
/* The load path of a global load ("cache" means this, everywhere): what
 * `cache=` selects in read_offset and bandwidth, gm_load<CACHE> in gm_launch.cuh. */
typedef enum {
    GM_CACHE_DEFAULT = 0, /* ld.global: the compiler's default (L1 + L2 on sm_70+) */
    GM_CACHE_CA = 1,      /* ld.global.ca (__ldca): cache at all levels */
    GM_CACHE_CG = 2,      /* ld.global.cg (__ldcg): cache in L2 only */
    GM_CACHE_LDG = 3,     /* ld.global.nc (__ldg): the read-only (texture) path */
    GM_CACHE_CS = 4       /* ld.global.cs (__ldcs): streaming, evict first */
} gm_cache_path;
/* Their names, in enum order: the `cache=` argument and _core.CACHE_PATHS. */
#define GM_CACHE_PATH_NAMES {"default", "ca", "cg", "ldg", "cs", NULL}

/* l2_flush: read every 16 bytes of buf (n16 of them; a zeroed buffer larger
 * than L2) through L2 (ld.global.cg): what L2 held is evicted -- dirty lines
 * written back now, not during the next timed kernel -- and L2 is left with
 * clean lines no one reads again.  measure.c owns the buffer. */
typedef struct {
    const void *buf;
    long long n16;
} gm_l2_flush_params;
GM_FAMILY(l2_flush)

/* differs: *flag = 1 when the `words` 4-byte words at a and b differ anywhere
 * (left alone when they are equal): the profiler's block replay asks whether
 * a launch may share an earlier copy of its input. */
typedef struct {
    const void *a;
    const void *b;
    unsigned long long words;
    int *flag;
} gm_differs_params;
GM_FAMILY(differs)

/* ==== the lessons: cuda/<stem>.h of every cuda/<stem>.cu ====================
 * gm_lesson_headers.inc: one #include "<stem>.h" per lesson header, written
 * by setup.py into the build's temp folder (never into the source tree). */
#include "gm_lesson_headers.inc"

#undef GM_FAMILY

#ifdef __cplusplus
}
#endif

#endif /* GM_KERNELS_H */
