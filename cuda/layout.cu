// layout.cu -- how data is laid out decides how many sectors a warp touches:
// the stride cliff, and array of structs (AoS) against struct of arrays (SoA).
// As in access.cu, every kernel's address pattern is a contract that
// gpumem.model reproduces address for address; no pointer is __restrict__.
#include "gm_launch.cuh"

// ---- strided_read ---------------------------------------------------------------
// The coalescing cliff: lane t reads A[t * stride].  Stride 1: 4 sectors per
// warp; stride 2: 8 (50%); stride 8 and beyond: 32 sectors, one per lane
// (12.5%) -- each 32-byte sector carries 4 useful bytes.  Writes stay dense.
__global__ void strided_read_kernel(const float *A, float *C, long long m, int stride)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m)
        C[i] = A[i * stride];
}

extern "C" const void *gm_strided_read_kernel(const gm_strided_read_params *)
{
    return (const void *)strided_read_kernel;
}

extern "C" cudaError_t gm_strided_read(const gm_strided_read_params *p, gm_dims *dims,
                                       cudaStream_t stream)
{
    long long m = (p->n + p->stride - 1) / p->stride;
    *dims = gm_dims_1d(gm_blocks_for(m, p->block), p->block);
    return gm_run(strided_read_kernel, dims, 0, stream, p->a, p->c, m, p->stride);
}

// ---- struct_update: AoS vs SoA -----------------------------------------------
// The book's innerStruct: 4-byte aligned, so nvcc must emit two 4-byte loads
// (LDG.E at +0 and +4) and two 4-byte stores, not one 8-byte access.  Each
// load instruction of a warp spans 256 bytes of which it uses 128: 50%.
struct innerStruct {
    float x;
    float y;
};

// VARIANT: gm_layout_variant.  AoS: data is n structs {x, y}; SoA: n x's, then n y's.
template <int VARIANT>
__global__ void struct_update_kernel(const float *data, float *result, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if constexpr (VARIANT == GM_LAYOUT_AOS) {
        if (i < n) {
            innerStruct tmp = reinterpret_cast<const innerStruct *>(data)[i];
            tmp.x += 10.f;
            tmp.y += 20.f;
            reinterpret_cast<innerStruct *>(result)[i] = tmp;
        }
    } else if (i < n) {
        // SoA: all x's, then all y's; every load and store is a dense 128-byte run.
        result[i] = data[i] + 10.f;
        result[n + i] = data[n + i] + 20.f;
    }
}

using layout_fn = void (*)(const float *, float *, long long);

static layout_fn select_update(const gm_struct_update_params *p)
{
    return gm_select<GM_LAYOUT_AOS, GM_LAYOUT_SOA>(
        p->variant, [](auto v) -> layout_fn { return struct_update_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_struct_update_kernel(const gm_struct_update_params *p)
{
    return (const void *)select_update(p);
}

extern "C" cudaError_t gm_struct_update(const gm_struct_update_params *p, gm_dims *dims,
                                        cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->n, p->block), p->block);
    return gm_run(select_update(p), dims, 0, stream, p->data, p->result, p->n);
}

// ---- distance to the origin: AoS vs SoA -----------------------------------------
// AoS points {x, y, z}: three 4-byte loads 12 bytes apart per lane, each
// warp-wide load spanning 384 bytes for 128 useful (about 33%, although L1
// serves the second and third from the lines the first brought in).  SoA:
// three dense loads.  The sum is rounded step by step (no FMA contraction),
// and sqrtf is IEEE-exact by default, so the result equals NumPy's float32
// sqrt((x*x + y*y) + z*z) bit for bit.
struct point3 {
    float x;
    float y;
    float z;
};

__device__ __forceinline__ float norm3(float x, float y, float z)
{
    return sqrtf(__fadd_rn(__fadd_rn(__fmul_rn(x, x), __fmul_rn(y, y)), __fmul_rn(z, z)));
}

// VARIANT: gm_layout_variant.  AoS: n points {x, y, z}; SoA: rows x, y, z.
template <int VARIANT>
__global__ void distance_kernel(const float *pts, float *d, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if constexpr (VARIANT == GM_LAYOUT_AOS) {
        if (i < n) {
            point3 p = reinterpret_cast<const point3 *>(pts)[i];
            d[i] = norm3(p.x, p.y, p.z);
        }
    } else if (i < n) {
        d[i] = norm3(pts[i], pts[n + i], pts[2 * n + i]);
    }
}

static layout_fn select_distance(const gm_distance_params *p)
{
    return gm_select<GM_LAYOUT_AOS, GM_LAYOUT_SOA>(
        p->variant, [](auto v) -> layout_fn { return distance_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_distance_kernel(const gm_distance_params *p)
{
    return (const void *)select_distance(p);
}

extern "C" cudaError_t gm_distance(const gm_distance_params *p, gm_dims *dims,
                                   cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->n, p->block), p->block);
    return gm_run(select_distance(p), dims, 0, stream, p->points, p->d, p->n);
}
