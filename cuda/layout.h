/* layout.h -- the C ABI of cuda/layout.cu (the layout lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_LAYOUT_H
#define GM_LAYOUT_H

/* ==== lesson layout (cuda/layout.cu) ===================================== */
/* strided_read: C[i] = A[i * stride] for i < m = ceil(n / stride). */
typedef struct {
    const float *a;
    float *c;
    long long n;
    int stride; /* 1..64 */
    int block;  /* 1..1024 */
} gm_strided_read_params;
GM_FAMILY(strided_read)

/* Array of structs or struct of arrays. */
typedef enum { GM_LAYOUT_AOS = 0, GM_LAYOUT_SOA = 1 } gm_layout_variant;

/* struct_update: r.x = d.x + 10, r.y = d.y + 20 for n {x, y} pairs;
 * aos: data is n structs {float x, y}; soa: n x's, then n y's. */
typedef struct {
    int variant; /* gm_layout_variant */
    const float *data;
    float *result;
    long long n;
    int block; /* 1..1024 */
} gm_struct_update_params;
GM_FAMILY(struct_update)

/* distance: d[i] = sqrt(x*x + y*y + z*z) of n points;
 * aos: n structs {float x, y, z}; soa: n x's, n y's, n z's. */
typedef struct {
    int variant; /* gm_layout_variant */
    const float *points;
    float *d;
    long long n;
    int block; /* 1..1024 */
} gm_distance_params;
GM_FAMILY(distance)

#endif /* GM_LAYOUT_H */
