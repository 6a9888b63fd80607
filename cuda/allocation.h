/* allocation.h -- the C ABI of cuda/allocation.cu (the allocation lesson's
 * kernels): included through gm_kernels.h only (which the build gives the
 * list of lesson headers, gm_lesson_headers.inc), inside its extern "C" and
 * with its GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_ALLOCATION_H
#define GM_ALLOCATION_H

/* ==== lesson allocation (cuda/allocation.cu) ================================ */
/* first_touch: write float32 memory, the first writes after an allocation or
 * writes into a buffer written before -- the kernel is the same, the memory's
 * history is the experiment. */
typedef enum {
    GM_TOUCH_WRITE = 0, /* every element, coalesced 16-byte stores */
    GM_TOUCH_PAGE = 1   /* one element per GM_TOUCH_PAGE_BYTES: every page, no bandwidth */
} gm_touch_variant;

#define GM_TOUCH_PAGE_BYTES 65536 /* bytes between the writes of the page variant */
#define GM_TOUCH_PAGE_FLOATS (GM_TOUCH_PAGE_BYTES / 4)
/* The value written at element i: exact in float32, distinct for the first 2^24. */
#define GM_TOUCH_VALUE(i) ((float)((i) & 0xFFFFFF))

typedef struct {
    int variant; /* gm_touch_variant */
    float *out;  /* 4-byte aligned; the write variant finds its own 16-byte boundary */
    long long n; /* floats of out, >= 1 */
    int block;   /* threads per block: a multiple of 32, 32..1024 */
} gm_first_touch_params;
GM_FAMILY(first_touch)

/* spin: one thread that waits `ns` nanoseconds on the GPU's global timer:
 * device work of a known length, for the timeline of cudaFree's implicit
 * synchronization (an internal launch of the lesson, no family of its own). */
typedef struct {
    long long ns;
} gm_spin_params;
GM_FAMILY(spin)

#endif /* GM_ALLOCATION_H */
