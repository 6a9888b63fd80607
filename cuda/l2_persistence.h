/* l2_persistence.h -- the C ABI of cuda/l2_persistence.cu (the l2_persistence
 * lesson's kernel): included through gm_kernels.h only (which the build gives
 * the list of lesson headers, gm_lesson_headers.inc), inside its extern "C"
 * and with its GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_L2_PERSISTENCE_H
#define GM_L2_PERSISTENCE_H

/* ==== lesson l2_persistence (cuda/l2_persistence.cu) ========================= */
/* hot_cold: one thread per element i of the cold array; it loads cold[i], then
 * `reuse` elements of the hot set, hot[(i + j * n_cold) mod n_hot] for
 * j = 0 .. reuse-1, and writes their float32 sum (added in that order) to
 * out[i].  The cold array streams past once; the hot set is read again and
 * again: whether it is still in L2 when it is read again is the experiment. */
typedef enum {
    GM_HOT_COLD_PLAIN = 0,         /* every load a default ld.global */
    GM_HOT_COLD_COLD_STREAMING = 1 /* the cold loads ld.global.cs (evict first) */
} gm_hot_cold_variant;

typedef struct {
    int variant;       /* gm_hot_cold_variant */
    const float *hot;  /* n_hot floats */
    long long n_hot;   /* >= 1 */
    const float *cold; /* n_cold floats */
    long long n_cold;  /* >= 1 */
    float *out;        /* n_cold floats; may be cold itself, never inside hot */
    int reuse;         /* hot loads per cold element, 1 .. 64 */
    int block;         /* threads per block: a multiple of 32, 32..1024 */
} gm_hot_cold_params;
GM_FAMILY(hot_cold)

#endif /* GM_L2_PERSISTENCE_H */
