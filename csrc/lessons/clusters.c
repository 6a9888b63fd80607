/* clusters.c -- the clusters lesson's entry points (cuda/clusters.cu):
 * distributed shared memory between the blocks of a thread block cluster.
 *   dsmem_chase        a pointer chase in a block's own or another block's shared memory
 *   dsmem_stream       coalesced 16-byte loads or stores into the next rank's shared memory
 *   cluster_histogram  bins spread over a cluster's shared memories, against per-block
 *                      shared bins and global atomics
 *   dsmem_pipeline     producer -> consumer in a cluster of two, through the consumer's
 *                      shared memory or through global memory
 * Every launch is a cluster launch, which needs compute capability 9.0: before
 * anything is launched, prepare() refuses an older GPU (CudaError naming the
 * capability) and a cluster this GPU will not schedule (ValueError naming
 * `cluster`, from cudaOccupancyMaxActiveClusters). */
#include "gm.h"

GM_THUNKS(dsmem_chase)
GM_THUNKS(dsmem_stream)
GM_THUNKS(cluster_histogram)
GM_THUNKS(dsmem_pipeline)

/* ---- what every family checks on the device ---------------------------------------- */
/* CudaError unless the GPU has compute capability 9.0 or newer. */
static int need_clusters(const char *fn)
{
    return gm_need_cc(fn, "a cluster launch (thread block clusters, distributed shared memory)",
                      GM_CLUSTER_CC_MAJOR, 0, "sm_90, Hopper");
}

/* Half an SM's shared memory (bytes, a multiple of 16, at most the opt-in per block):
 * a block asking for this much has an SM to itself (two would need more than the SM
 * has, with the 1 KiB the system reserves per block), so every rank of a cluster sits
 * on its own SM and DSMEM accesses cross the SM-to-SM network. */
static int smem_spread(long long *out)
{
    int dev = 0, sm = 0, optin = 0;
    GM_CUDA(cudaGetDevice(&dev));
    GM_CUDA(cudaDeviceGetAttribute(&sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    GM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    *out = ((long long)(sm / 2 < optin ? sm / 2 : optin)) / 16 * 16;
    return 0;
fail:
    return -1;
}

/* The device's opt-in shared memory per block (bytes). */
static int smem_optin(long long *out)
{
    int dev = 0, v = 0;
    GM_CUDA(cudaGetDevice(&dev));
    GM_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    *out = v;
    return 0;
fail:
    return -1;
}

/* *fit: clusters of this shape resident at once (>= 1); ValueError naming
 * `cluster` when the GPU refuses it. */
static int cluster_fits(const gm_call *c, const void *kernel, int cluster, int block, size_t smem,
                        int *fit)
{
    const cudaError_t err = gm_cluster_fit(kernel, cluster, block, smem, fit);
    if (err == cudaSuccess && *fit > 0)
        return 0;
    (void)cudaGetLastError(); /* a refused configuration is not sticky */
    PyErr_Format(PyExc_ValueError,
                 "%s: cluster=%d is refused by this GPU: no cluster of %d blocks of %d threads "
                 "with %zu bytes of shared memory each can be scheduled (%s; clusters above %d "
                 "blocks are non-portable and not every GPU allows them)",
                 c->f->name, cluster, cluster, block, smem,
                 err == cudaSuccess ? "cudaOccupancyMaxActiveClusters says 0"
                                    : cudaGetErrorName(err),
                 GM_CLUSTER_PORTABLE);
    *fit = 0;
    return -1;
}

/* The most shared memory a block may have here: ValueError naming `what` above it. */
static int smem_fits(const gm_call *c, long long need, const char *what)
{
    long long most = 0;
    if (smem_optin(&most) < 0)
        return -1;
    if (need <= most)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s needs %lld bytes of shared memory per block; this GPU "
                 "gives a block at most %lld", c->f->name, what, need, most);
    return -1;
}

static const long long powers_of_two[] = {1, 2, 4, 8, 16, 0};
static const long long cluster_sizes[] = {2, 4, 8, 16, 0};

/* ---- dsmem_chase -------------------------------------------------------------------- */
static const gm_variant chase_variants[] = {
    GM_ROW(dsmem_chase, "local", GM_CHASE_LOCAL,
           "a pointer chase in the block's own shared memory (ld.shared, LDS): the on-chip "
           "scratchpad's latency (compute capability 9.0+: launched as a cluster)",
           "4*(warmup + steps)", "0"),
    GM_ROW(dsmem_chase, "self", GM_CHASE_SELF,
           "the same chase in its own shared memory addressed through the cluster window "
           "(ld.shared::cluster to its own rank; compute capability 9.0+)",
           "4*(warmup + steps)", "0"),
    GM_ROW(dsmem_chase, "remote", GM_CHASE_REMOTE,
           "the chase in cluster rank 1's shared memory (mapa + ld.shared::cluster): every "
           "load crosses the SM-to-SM network (compute capability 9.0+)",
           "4*(warmup + steps)", "0"),
    GM_END_ROWS,
};

enum { CH_NODES, CH_VARIANT, CH_CLUSTER, CH_STEPS, CH_WARMUP, CH_HOP, CH_SMEM };
static const gm_arg chase_args[] = {
    [CH_NODES] = {"nodes", GM_INT, GM_POSITIONAL | GM_RECORD, 1024, 2, GM_CHASE_MAX_NODES,
                  .what = " (4-byte links in shared memory)"},
    [CH_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "remote"},
    [CH_CLUSTER] = {"cluster", GM_INT, GM_RECORD, 2, 2, GM_CLUSTER_MAX, .allowed = cluster_sizes,
                    .what = " (blocks per cluster)"},
    [CH_STEPS] = {"steps", GM_INT, GM_RECORD, 4096, 1, 1 << 20, .what = " (timed loads)"},
    [CH_WARMUP] = {"warmup", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 0, 1 << 24,
                   .what = " (untimed loads first)"},
    [CH_HOP] = {"hop", GM_INT, GM_HIDDEN | GM_RECORD, 0, 0, GM_CHASE_MAX_NODES},
    [CH_SMEM] = {"smem", GM_INT, GM_HIDDEN, 0, 0, GM_STREAM_MAX_SMEM},
    {NULL},
};

static long long gcd(long long a, long long b)
{
    while (b) {
        const long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The ring's hop: the first value from nodes / 2 + 1 up that is coprime to nodes
 * (so the ring is one cycle through every node), reduced mod nodes. */
static long long chase_hop(long long nodes)
{
    long long h = nodes / 2 + 1;
    while (gcd(h, nodes) != 1)
        h++;
    return h % nodes;
}

static int chase_check(gm_call *c)
{
    const long long nodes = c->v[CH_NODES];
    npy_intp shape[1] = {2};
    gm_result(c, 1, shape, NPY_INT64);
    if (!c->given[CH_WARMUP])
        c->v[CH_WARMUP] = nodes; /* one lap: the ring's links read once before timing */
    c->v[CH_HOP] = chase_hop(nodes);
    c->work = 1;
    c->bytes = 4.0 * (double)(c->v[CH_WARMUP] + c->v[CH_STEPS]);
    c->flops = 0.0;
    return 0;
}

static void chase_fill(const gm_call *c, void *params)
{
    const long long nodes = c->v[CH_NODES] ? c->v[CH_NODES] : 1024;
    *(gm_dsmem_chase_params *)params = (gm_dsmem_chase_params){
        c->variant ? c->variant->select : GM_CHASE_REMOTE,
        gm_res(c),
        (int)nodes,
        c->v[CH_HOP] ? (int)c->v[CH_HOP] : (int)chase_hop(nodes),
        (int)c->v[CH_STEPS],
        (int)c->v[CH_WARMUP],
        c->v[CH_CLUSTER] ? (int)c->v[CH_CLUSTER] : 2,
        (int)c->v[CH_SMEM],
    };
}

/* Before the launch: the GPU checked; every block given half an SM's shared memory
 * (smem_spread: the ranks on SMs of their own, the ring at its start); the cluster
 * checked. */
static int chase_prepare(gm_call *c)
{
    gm_dsmem_chase_params p;
    int fit = 0;
    if (need_clusters(c->f->name) < 0 || smem_spread(&c->v[CH_SMEM]) < 0 ||
        gm_record(c, "smem", c->v[CH_SMEM]) < 0)
        return -1;
    chase_fill(c, &p);
    return cluster_fits(c, c->variant->kernel(&p), p.cluster, GM_CHASE_BLOCK,
                        gm_dsmem_chase_smem(&p), &fit);
}

static const gm_family gm_dsmem_chase_family = {
    "dsmem_chase",
    "One thread of cluster rank 0 chases a ring of `nodes` 4-byte links (node i links to "
    "(i + hop) mod nodes; every block of the cluster holds the same ring in its shared memory) "
    "in its own shared memory (local, self) or in rank 1's (remote): `warmup` untimed loads "
    "(default: one lap), then `steps` timed ones.  int64 [the node it ends at, clock64 cycles "
    "of the timed loads].  Needs compute capability 9.0.",
    chase_args, 0, 0, chase_variants, chase_check, chase_prepare, chase_fill,
};

/* ---- dsmem_stream -------------------------------------------------------------------- */
#define STREAM_BYTES "16*(smem/16)*passes*cluster*clusters"
static const gm_variant stream_variants[] = {
    GM_ROW(dsmem_stream, "read", GM_STREAM_READ,
           "each block reads the next cluster rank's shared memory with coalesced 16-byte "
           "loads (ld.shared::cluster.v4): distributed shared memory's read bandwidth "
           "(compute capability 9.0+)",
           STREAM_BYTES, "0"),
    GM_ROW(dsmem_stream, "write", GM_STREAM_WRITE,
           "each block writes the next rank's shared memory with coalesced 16-byte stores "
           "(st.shared::cluster.v4): distributed shared memory's write bandwidth (compute "
           "capability 9.0+)",
           STREAM_BYTES, "0"),
    GM_ROW(dsmem_stream, "local", GM_STREAM_LOCAL,
           "each block reads its own shared memory with the same 16-byte loads (ld.shared.v4): "
           "the SM's own bandwidth, for comparison (launched as a cluster: compute capability "
           "9.0+)",
           STREAM_BYTES, "0"),
    GM_END_ROWS,
};

enum { ST_VARIANT, ST_CLUSTER, ST_SMEM, ST_PASSES, ST_BLOCK, ST_CLUSTERS };
static const gm_arg stream_args[] = {
    [ST_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "read"},
    [ST_CLUSTER] = {"cluster", GM_INT, GM_RECORD, 2, 1, GM_CLUSTER_MAX, .allowed = powers_of_two,
                    .what = " (blocks per cluster)"},
    [ST_SMEM] = {"smem", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 16, GM_STREAM_MAX_SMEM,
                 .what = " (bytes of shared memory per block)"},
    [ST_PASSES] = {"passes", GM_INT, GM_RECORD, 64, 1, 1 << 16},
    [ST_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 512, 32, 1024, .what = " threads"},
    [ST_CLUSTERS] = {"clusters", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 1, 1 << 20,
                     .what = " (clusters in the grid)"},
    {NULL},
};

static void stream_amounts(gm_call *c)
{
    c->bytes = 16.0 * (double)(c->v[ST_SMEM] / 16) * (double)c->v[ST_PASSES] *
               (double)c->v[ST_CLUSTER] * (double)c->v[ST_CLUSTERS];
    c->flops = 0.0;
}

static int stream_check(gm_call *c)
{
    if (c->given[ST_SMEM] && c->v[ST_SMEM] % 16) {
        PyErr_Format(PyExc_ValueError, "dsmem_stream: smem=%lld is not allowed; smem must be a "
                     "multiple of 16 bytes (whole 16-byte words) from 16 to %d",
                     c->v[ST_SMEM], GM_STREAM_MAX_SMEM);
        return -1;
    }
    npy_intp shape[1] = {1};
    gm_result(c, 1, shape, NPY_UINT32);
    c->work = 1;
    stream_amounts(c);
    return 0;
}

static void stream_fill(const gm_call *c, void *params)
{
    *(gm_dsmem_stream_params *)params = (gm_dsmem_stream_params){
        c->variant ? c->variant->select : GM_STREAM_READ,
        gm_res(c),
        c->v[ST_SMEM] ? (int)c->v[ST_SMEM] : 65536, /* (kernel_attributes: any size) */
        (int)c->v[ST_PASSES],
        c->v[ST_CLUSTER] ? (int)c->v[ST_CLUSTER] : 2,
        c->v[ST_CLUSTERS] ? (int)c->v[ST_CLUSTERS] : 1,
        c->v[ST_BLOCK] ? (int)c->v[ST_BLOCK] : 512,
    };
}

/* Before the launch: the GPU checked; smem (when not given: half an SM's shared
 * memory, so that every block has an SM of its own and every DSMEM access crosses
 * the SM-to-SM network) and the cluster checked; the grid (when not given: as many
 * clusters as can be resident at once, one full wave), out zeroed (a profiler
 * replay restores it: an in-place buffer). */
static int stream_prepare(gm_call *c)
{
    gm_dsmem_stream_params p;
    int fit = 0;
    if (need_clusters(c->f->name) < 0)
        return -1;
    if (!c->given[ST_SMEM] && smem_spread(&c->v[ST_SMEM]) < 0)
        return -1;
    if (gm_record(c, "smem", c->v[ST_SMEM]) < 0)
        return -1;
    stream_fill(c, &p);
    if (smem_fits(c, c->v[ST_SMEM], "smem") < 0 ||
        cluster_fits(c, c->variant->kernel(&p), p.cluster, p.block, (size_t)p.smem, &fit) < 0)
        return -1;
    if (!c->given[ST_CLUSTERS])
        c->v[ST_CLUSTERS] = fit;
    if (gm_record(c, "clusters", c->v[ST_CLUSTERS]) < 0)
        return -1;
    stream_amounts(c);
    GM_CUDA(cudaMemsetAsync(gm_res(c), 0, sizeof(unsigned), c->stream));
    c->inout[0] = (gm_buffer){gm_res(c), sizeof(unsigned)};
    c->n_inout = 1;
    return 0;
fail:
    return -1;
}

static const gm_family gm_dsmem_stream_family = {
    "dsmem_stream",
    "Clusters of `cluster` blocks (`clusters` of them; default: as many as fit at once): every "
    "block fills `smem` bytes of shared memory (default: half an SM's, so that each block has "
    "an SM of its own) with uint32 words, then `passes` times reads "
    "the next rank's (read), writes the next rank's (write) or reads its own (local) with "
    "coalesced 16-byte accesses.  uint32 [the sum of every word read, or for write of every "
    "word written last, wrapping at 2^32].  Needs compute capability 9.0.",
    stream_args, 0, 0, stream_variants, stream_check, stream_prepare, stream_fill,
};

/* ---- cluster_histogram ----------------------------------------------------------------- */
static const gm_variant hist_variants[] = {
    GM_ROW(cluster_histogram, "cluster", GM_HIST_CLUSTER,
           "the bins spread over the shared memories of a cluster, each atomicAdd sent to the "
           "rank that owns the bin (the Programming Guide's distributed-shared-memory "
           "histogram): more bins than one block holds (compute capability 9.0+)",
           "4*n + 4*bins*cluster*clusters", "0"),
    GM_ROW(cluster_histogram, "block", GM_HIST_BLOCK,
           "every bin in each block's own shared memory, atomics there, then added into the "
           "global counts: only while all bins fit one block (compute capability 9.0+)",
           "4*n + 4*bins*clusters", "0"),
    GM_ROW(cluster_histogram, "global", GM_HIST_GLOBAL,
           "one atomicAdd in global memory per value: the atomics run in L2 (compute "
           "capability 9.0+: launched as a cluster of one)",
           "4*n + 4*bins", "0"),
    GM_ROW(cluster_histogram, "owner", GM_HIST_OWNER,
           "the bins spread over a cluster as for 'cluster', but the values travel instead of "
           "the atomics: every rank reads all of its cluster's values and counts those it owns "
           "in its own shared memory (no DSMEM; L2 serves the repeated reads); 1024 threads a "
           "block by default (compute capability 9.0+)",
           "4*n*cluster + 4*bins*cluster*clusters", "0"),
    GM_END_ROWS,
};

#define HIST_MAX_BINS (1LL << 24)

enum { HI_X, HI_BINS, HI_VARIANT, HI_CLUSTER, HI_BLOCK, HI_CLUSTERS };
static const gm_arg hist_args[] = {
    [HI_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1, .typenum = NPY_UINT32},
    [HI_BINS] = {"bins", GM_INT, GM_POSITIONAL | GM_REQUIRED | GM_RECORD, 0, 1, HIST_MAX_BINS},
    [HI_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "cluster"},
    [HI_CLUSTER] = {"cluster", GM_INT, GM_NO_DEFAULT | GM_RECORD, 1, 1, GM_CLUSTER_MAX,
                    .allowed = powers_of_two, .what = " (blocks per cluster)"},
    [HI_BLOCK] = {"block", GM_INT, GM_NO_DEFAULT | GM_RECORD | GM_WHOLE_WARPS, 512, 32, 1024,
                  .what = " threads"},
    [HI_CLUSTERS] = {"clusters", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 1, 1 << 20,
                     .what = " (clusters in the grid)"},
    {NULL},
};

static void hist_amounts(gm_call *c)
{
    const double n = (double)gm_dim(c, HI_X, 0), bins = (double)c->v[HI_BINS];
    const double blocks = (double)c->v[HI_CLUSTER] * (double)c->v[HI_CLUSTERS];
    const int sel = c->variant->select;
    /* x read once (owner: once per rank); the global counts written once per block that
     * holds them */
    c->bytes = 4.0 * n * (sel == GM_HIST_OWNER ? (double)c->v[HI_CLUSTER] : 1.0) +
               4.0 * bins * (sel == GM_HIST_GLOBAL ? 1.0
                             : sel == GM_HIST_BLOCK ? blocks
                                                    : (double)c->v[HI_CLUSTERS]);
    c->flops = 0.0;
}

static int hist_check(gm_call *c)
{
    const long long n = gm_dim(c, HI_X, 0);
    const int sel = c->variant->select;
    if (n > 0xffffffffLL) {
        PyErr_Format(PyExc_ValueError, "cluster_histogram: x has %lld values; at most 2^32 - 1 "
                     "(the counts are uint32)", n);
        return -1;
    }
    const int spread = sel == GM_HIST_CLUSTER || sel == GM_HIST_OWNER;
    if (!spread && c->given[HI_CLUSTER] && c->v[HI_CLUSTER] != 1) {
        PyErr_Format(PyExc_ValueError, "cluster_histogram: cluster=%lld is not allowed with "
                     "variant='%s'; only variant='cluster' and 'owner' spread the bins over a "
                     "cluster", c->v[HI_CLUSTER], c->variant->name);
        return -1;
    }
    if (!spread)
        c->v[HI_CLUSTER] = 1;
    if (!c->given[HI_BLOCK]) /* owner waits on its loads: twice the threads, twice in flight */
        c->v[HI_BLOCK] = sel == GM_HIST_OWNER ? 1024 : 512;
    npy_intp shape[1] = {(npy_intp)c->v[HI_BINS]};
    gm_result(c, 1, shape, NPY_UINT32);
    c->work = n;
    return gm_record(c, "n", n);
}

static void hist_fill(const gm_call *c, void *params)
{
    *(gm_cluster_histogram_params *)params = (gm_cluster_histogram_params){
        c->variant ? c->variant->select : GM_HIST_CLUSTER,
        (const unsigned *)gm_in(c, HI_X),
        (unsigned *)gm_res(c),
        gm_dim(c, HI_X, 0),
        c->v[HI_BINS] ? (int)c->v[HI_BINS] : 1,
        c->v[HI_CLUSTER] ? (int)c->v[HI_CLUSTER] : 1,
        c->v[HI_CLUSTERS] ? (int)c->v[HI_CLUSTERS] : 1,
        c->v[HI_BLOCK] ? (int)c->v[HI_BLOCK] : 512,
    };
}

/* Before the launch: the GPU checked; the cluster (when not given: the smallest
 * power of two whose slices of the bins fit a block's shared memory here), the
 * shared memory and the cluster checked against this GPU; the grid (when not
 * given: enough clusters for one value per thread, at most those resident at
 * once); the counts zeroed (an in-place buffer for a profiler replay). */
static int hist_prepare(gm_call *c)
{
    const int sel = c->variant->select;
    const long long bins = c->v[HI_BINS], n = gm_dim(c, HI_X, 0);
    long long most = 0;
    int fit = 0;
    if (need_clusters(c->f->name) < 0 || smem_optin(&most) < 0)
        return -1;
    if ((sel == GM_HIST_CLUSTER || sel == GM_HIST_OWNER) && !c->given[HI_CLUSTER]) {
        long long k = 1;
        while (k < GM_CLUSTER_MAX && (bins + k - 1) / k * 4 > most)
            k *= 2;
        c->v[HI_CLUSTER] = k;
    }
    gm_cluster_histogram_params p;
    hist_fill(c, &p);
    const size_t smem = gm_cluster_histogram_smem(&p);
    if (sel != GM_HIST_GLOBAL && (long long)smem > most) {
        if (sel == GM_HIST_BLOCK)
            PyErr_Format(PyExc_ValueError, "cluster_histogram: bins=%lld is not allowed with "
                         "variant='block'; its %lld bytes of counts must fit one block's shared "
                         "memory, at most %lld bytes here (variant='cluster' spreads them over "
                         "a cluster)", bins, 4 * bins, most);
        else
            PyErr_Format(PyExc_ValueError, "cluster_histogram: bins=%lld is not allowed with "
                         "cluster=%lld; a slice of %zu bytes of counts per block is more than "
                         "the %lld bytes of shared memory a block may have here", bins,
                         c->v[HI_CLUSTER], smem, most);
        return -1;
    }
    if (cluster_fits(c, c->variant->kernel(&p), p.cluster, p.block, smem, &fit) < 0)
        return -1;
    if (!c->given[HI_CLUSTERS]) {
        const long long per_cluster = (long long)p.block * p.cluster;
        const long long want = (n + per_cluster - 1) / per_cluster;
        c->v[HI_CLUSTERS] = want < 1 ? 1 : want < fit ? want : fit;
    }
    if (gm_record(c, "cluster", c->v[HI_CLUSTER]) < 0 ||
        gm_record(c, "clusters", c->v[HI_CLUSTERS]) < 0)
        return -1;
    hist_amounts(c);
    GM_CUDA(cudaMemsetAsync(gm_res(c), 0, (size_t)bins * 4, c->stream));
    c->inout[0] = (gm_buffer){gm_res(c), (size_t)bins * 4};
    c->n_inout = 1;
    return 0;
fail:
    return -1;
}

static const gm_family gm_cluster_histogram_family = {
    "cluster_histogram",
    "Counts of the values of x (uint32) below `bins` (values >= bins are not counted): uint32 "
    "counts, bins of them (out= is overwritten).  variant 'cluster' spreads the bins over the "
    "shared memories of clusters of `cluster` blocks (default: the smallest power of two whose "
    "slices fit), 'block' keeps all of them in each block's, 'global' adds in global memory, "
    "'owner' spreads them as 'cluster' does and has every rank read all of its cluster's "
    "values.  Needs compute capability 9.0.",
    hist_args, 1, 0, hist_variants, hist_check, hist_prepare, hist_fill,
};

/* ---- dsmem_pipeline --------------------------------------------------------------------- */
static const gm_variant pipe_variants[] = {
    GM_ROW(dsmem_pipeline, "dsmem", GM_PIPE_DSMEM,
           "producer -> consumer in a cluster of two: each tile stored straight into the "
           "consumer block's shared memory (compute capability 9.0+)",
           "8*n", "2*n"),
    GM_ROW(dsmem_pipeline, "global", GM_PIPE_GLOBAL,
           "the same pipeline handing each tile over through a global buffer: written to L2, "
           "read back from it by the other SM (compute capability 9.0+)",
           "8*n", "2*n"),
    GM_END_ROWS,
};

enum { PI_X, PI_VARIANT, PI_BLOCK, PI_CLUSTERS };
static const gm_arg pipe_args[] = {
    [PI_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [PI_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "dsmem"},
    [PI_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 256, 32, 1024, .what = " threads"},
    [PI_CLUSTERS] = {"clusters", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 1, 1 << 20,
                     .what = " (clusters of two in the grid)"},
    {NULL},
};

static int pipe_check(gm_call *c)
{
    const long long n = gm_dim(c, PI_X, 0);
    gm_result(c, 1, c->op[PI_X].shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 8.0 * (double)n;
    c->flops = 2.0 * (double)n;
    return gm_record(c, "n", n);
}

static void pipe_fill(const gm_call *c, void *params)
{
    *(gm_dsmem_pipeline_params *)params = (gm_dsmem_pipeline_params){
        c->variant ? c->variant->select : GM_PIPE_DSMEM,
        gm_in(c, PI_X),
        (float *)gm_res(c),
        (float *)gm_tmp(c),
        gm_dim(c, PI_X, 0),
        c->v[PI_CLUSTERS] ? (int)c->v[PI_CLUSTERS] : 1,
        c->v[PI_BLOCK] ? (int)c->v[PI_BLOCK] : 256,
    };
}

/* Before the launch: the GPU and the cluster checked; the grid (when not given: one
 * cluster per tile, at most as many as can be resident at once: one wave); the
 * global variant's hand-off buffer (tmp: two tiles per cluster). */
static int pipe_prepare(gm_call *c)
{
    const long long n = gm_dim(c, PI_X, 0), tile = 4 * c->v[PI_BLOCK];
    gm_dsmem_pipeline_params p;
    int fit = 0;
    pipe_fill(c, &p);
    if (need_clusters(c->f->name) < 0 ||
        cluster_fits(c, c->variant->kernel(&p), GM_PIPE_CLUSTER, p.block,
                     gm_dsmem_pipeline_smem(&p), &fit) < 0)
        return -1;
    if (!c->given[PI_CLUSTERS]) {
        const long long tiles = (n + tile - 1) / tile;
        c->v[PI_CLUSTERS] = tiles < 1 ? 1 : tiles < fit ? tiles : fit;
    }
    if (gm_record(c, "clusters", c->v[PI_CLUSTERS]) < 0)
        return -1;
    if (c->variant->select == GM_PIPE_GLOBAL &&
        gm_new_tmp(c, (npy_intp)(c->v[PI_CLUSTERS] * 2 * tile), NPY_FLOAT32) < 0)
        return -1;
    return 0;
}

static const gm_family gm_dsmem_pipeline_family = {
    "dsmem_pipeline",
    "2 x + 1 of every element of x (float32), through a producer -> consumer pipeline in "
    "clusters of two blocks: rank 0 computes each tile of 4 * block floats, rank 1 stores it "
    "to the result; the tile is handed over in the consumer's shared memory (dsmem) or in "
    "global memory (global).  Needs compute capability 9.0.",
    pipe_args, 1, 0, pipe_variants, pipe_check, pipe_prepare, pipe_fill,
};

/* ---- the lesson ----------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_dsmem_chase_family,
    &gm_dsmem_stream_family,
    &gm_cluster_histogram_family,
    &gm_dsmem_pipeline_family,
    NULL,
};

const gm_lesson gm_lesson_clusters = {"clusters", families, NULL, NULL};
