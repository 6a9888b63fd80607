/* gm_kernels.h -- the C ABI between csrc/ (the Python extension, C11) and
 * cuda/ (kernels and their extern "C" launchers).
 *
 * Every launcher has the same shape:
 *
 *     cudaError_t gm_<family>_<variant>(const gm_<family>_params *p,
 *                                       gm_dims *dims, cudaStream_t stream);
 *
 * It picks the launch configuration, writes it to *dims, launches on
 * `stream` and returns cudaGetLastError().  It never synchronizes, allocates
 * or prints: the extension's one launch helper (csrc/launch.c) times it with
 * events and turns errors into Python exceptions.  Arguments have been
 * validated by the caller.
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

/* ---- vec_add: c[i] = a[i] + b[i], one element per thread ---------------- */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    long long n;
    int block; /* threads per block, 1..1024 */
} gm_vec_add_params;

cudaError_t gm_vec_add(const gm_vec_add_params *p, gm_dims *dims, cudaStream_t stream);

/* ---- matmul: C[M,N] = A[M,K] @ B[K,N], float32, row-major --------------- */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    int m, n, k;
    int tile; /* 8, 16 or 32: block is tile x tile threads */
} gm_matmul_params;

cudaError_t gm_matmul_naive(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_matmul_tiled(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GM_KERNELS_H */
