/* clusters.h -- the C ABI of cuda/clusters.cu (the clusters lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these.
 *
 * Every kernel here is launched as a thread block cluster (cudaLaunchKernelEx
 * with a cluster dimension) and reads or writes the shared memory of other
 * blocks of its cluster: distributed shared memory, compute capability 9.0
 * and newer.  For older architectures the kernels are built empty; csrc
 * refuses those GPUs before any launch. */
#ifndef GM_CLUSTERS_H
#define GM_CLUSTERS_H

#define GM_CLUSTER_MAX 16       /* blocks per cluster: 8 portable, 16 where the GPU allows */
#define GM_CLUSTER_PORTABLE 8
#define GM_CLUSTER_CC_MAJOR 9   /* clusters need compute capability 9.0 */

/* dsmem_chase: one thread of rank 0 follows a ring of `nodes` 4-byte links,
 * node i holding the byte offset of node (i + hop) mod nodes, every load's
 * address the value the previous load returned. */
typedef enum {
    GM_CHASE_LOCAL = 0,   /* its own shared memory, ld.shared (LDS) */
    GM_CHASE_SELF = 1,    /* its own, through the cluster window (ld.shared::cluster) */
    GM_CHASE_REMOTE = 2   /* rank 1's shared memory (ld.shared::cluster after mapa) */
} gm_chase_variant;
#define GM_CHASE_MAX_NODES 12288 /* 48 KiB of links: the default dynamic shared memory */
#define GM_CHASE_BLOCK 128       /* threads per block: they write the ring; one chases */

typedef struct {
    int variant;     /* gm_chase_variant */
    long long *out;  /* 2: the node it ends at, clock64 cycles of the timed steps */
    int nodes;       /* 2..GM_CHASE_MAX_NODES */
    int hop;         /* coprime to nodes: one cycle through every node */
    int steps;       /* timed loads */
    int warmup;      /* untimed loads before them */
    int cluster;     /* blocks per cluster, 2..GM_CLUSTER_MAX */
    int smem;        /* dynamic shared memory per block (>= 4 * nodes; 0: 4 * nodes): csrc
                        asks for half an SM's, so that no two blocks share an SM */
} gm_dsmem_chase_params;
GM_FAMILY(dsmem_chase)

/* dsmem_stream: every block fills `smem` bytes of its shared memory, then
 * streams 16-byte words of the next rank's (read, write) or its own (local)
 * `passes` times; out[0] (zeroed first) collects a uint32 checksum of what
 * was read (write: each block sums the words its neighbour wrote). */
typedef enum {
    GM_STREAM_READ = 0,   /* ld.shared::cluster.v4 from rank (r + 1) mod cluster */
    GM_STREAM_WRITE = 1,  /* st.shared::cluster.v4 into rank (r + 1) mod cluster */
    GM_STREAM_LOCAL = 2   /* ld.shared.v4 from its own shared memory */
} gm_stream_variant;
#define GM_STREAM_MAX_SMEM (227 * 1024) /* bytes: sm_90's opt-in maximum per block */
/* The word j of block b's buffer (uint32, wrapping), at pass p of a write. */
#define GM_STREAM_WORD(b, j, p) ((unsigned)(b) * 65599u + (unsigned)(j) + (unsigned)(p))

typedef struct {
    int variant;      /* gm_stream_variant */
    unsigned *out;    /* 1: the checksum, zeroed before the launch */
    int smem;         /* bytes per block, a multiple of 16 (csrc's default: half an SM's
                         shared memory, so that every block of a cluster has an SM of its own) */
    int passes;
    int cluster;      /* 1..GM_CLUSTER_MAX */
    int clusters;     /* clusters in the grid */
    int block;        /* threads per block */
} gm_dsmem_stream_params;
GM_FAMILY(dsmem_stream)

/* cluster_histogram: counts of the uint32 values below `bins` (the others
 * are not counted) into out (uint32, zeroed before the launch). */
typedef enum {
    GM_HIST_CLUSTER = 0, /* bins split over the cluster's shared memories, atomics to the owner */
    GM_HIST_BLOCK = 1,   /* every bin in each block's shared memory, atomics there */
    GM_HIST_GLOBAL = 2,  /* atomics straight into the global counts */
    GM_HIST_OWNER = 3    /* bins split as for CLUSTER; every rank reads all of its cluster's
                            values and counts those it owns: no DSMEM, local atomics only */
} gm_hist_variant;

typedef struct {
    int variant;          /* gm_hist_variant */
    const unsigned *x;
    unsigned *out;        /* bins counts */
    long long n;
    int bins;
    int cluster;          /* blocks per cluster (1 for block and global) */
    int clusters;         /* clusters in the grid */
    int block;            /* threads per block */
} gm_cluster_histogram_params;
GM_FAMILY(cluster_histogram)

/* dsmem_pipeline: clusters of two blocks, rank 0 producing tiles of
 * 4 * block floats (2 x + 1 of x's), rank 1 consuming them (storing them to
 * out), one cluster.sync() per tile, two tiles in flight. */
typedef enum {
    GM_PIPE_DSMEM = 0,  /* the producer stores each tile into the consumer's shared memory */
    GM_PIPE_GLOBAL = 1  /* ... into a global buffer of the cluster's, read back through L2 */
} gm_pipe_variant;
#define GM_PIPE_CLUSTER 2

typedef struct {
    int variant;       /* gm_pipe_variant */
    const float *x;
    float *out;
    float *scratch;    /* global: 2 tiles per cluster (clusters * 8 * block floats) */
    long long n;
    int clusters;      /* clusters in the grid */
    int block;         /* threads per block */
} gm_dsmem_pipeline_params;
GM_FAMILY(dsmem_pipeline)

/* Shared memory per block a launch of p needs (dynamic, bytes). */
size_t gm_cluster_histogram_smem(const gm_cluster_histogram_params *p);
size_t gm_dsmem_stream_smem(const gm_dsmem_stream_params *p);
size_t gm_dsmem_chase_smem(const gm_dsmem_chase_params *p);
size_t gm_dsmem_pipeline_smem(const gm_dsmem_pipeline_params *p);

/* How many clusters of `cluster` blocks of `block` threads with `smem` bytes
 * of dynamic shared memory each can be resident at once (the kernel's
 * attributes for more than 48 KiB and for more than 8 blocks set first):
 * *clusters = 0, or an error, when the GPU refuses such a cluster. */
cudaError_t gm_cluster_fit(const void *kernel, int cluster, int block, size_t smem,
                           int *clusters);

#endif /* GM_CLUSTERS_H */
