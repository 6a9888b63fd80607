/* profile_replay.c -- block replay: a metric set that needs several passes
 * is read for many launches at once.  Inside the block each launch runs and
 * is timed as usual; before it, gpumem records it -- its params with every
 * buffer moved to a copy made now -- and later replays the recorded
 * launches together: per pass one cuptiRangeProfilerStart, then for each
 * launch its in-place buffers restored, L2 flushed and a user range around
 * the launch; at the end one decode fills every launch's metric dict.
 * CUPTI reprograms the counters once per pass and batch, not once per pass
 * and launch (the ~12 ms that made per-launch replay slow).
 *
 * The copies live in one device arena per batch:
 *   read-only inputs   copied once; a later launch reading the same buffer
 *                      shares the copy when the comparison kernel
 *                      (cuda/runtime.cu's differs) finds the contents
 *                      equal (a sweep over the same arrays holds one copy);
 *   in-place buffers   a pristine copy and a working copy, restored before
 *                      every pass;
 *   write-only results one sink shared by the batch (nobody reads it).
 * Each copy keeps its original's address modulo 4096, so sectors, lines
 * and banks fall as they did in the user's launch.  A batch is replayed
 * when it holds max_ranges launches, when the next launch's copies do not
 * fit, when records are read (_profile_sync) and at the end of the block.
 * The arena and sink together stay under a cap (a quarter of the device
 * memory free when the block began, GPUMEM_PROFILE_REPLAY_MB to set it); a
 * launch whose copies alone exceed it, or one that depends on device state
 * outside its buffers (gm_launch_info.moved == NULL), is profiled on the
 * spot as before. */
#include "profile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GM_COPY_ALIGN 4096 /* a copy's address = its original's, modulo this */
#define GM_MAX_BUFS (GM_MAX_ARGS + 2)

GM_THUNKS(differs)
static const gm_variant differs_variant = GM_ROW(
    differs, "default", 0, "two device buffers compared word by word", "8*words", "0");

int gm_prof_block_setup(void)
{
    size_t free_b = 0, total_b = 0;
    GM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const char *env = getenv("GPUMEM_PROFILE_REPLAY_MB");
    if (env && *env) {
        long long mb = strtoll(env, NULL, 10);
        gm_prof.arena_cap = mb > 0 ? (size_t)mb << 20 : 0;
    } else {
        gm_prof.arena_cap = free_b / 4;
    }
    gm_prof.recs = PyMem_Calloc(gm_prof.max_ranges, sizeof(gm_prof_record));
    if (gm_prof.recs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (gm_device_alloc(256, (void **)&gm_prof.flag) < 0)
        return -1;
    return 0;
fail:
    return -1;
}

static void free_copies(void)
{
    gm_device_free(gm_prof.arena, gm_prof.arena_size);
    gm_device_free(gm_prof.sink, gm_prof.sink_size);
    gm_prof.arena = gm_prof.sink = NULL;
    gm_prof.arena_size = gm_prof.arena_used = gm_prof.sink_size = 0;
}

void gm_prof_block_free(void)
{
    free_copies();
    gm_device_free(gm_prof.flag, 256);
    gm_prof.flag = NULL;
    PyMem_Free(gm_prof.recs);
    PyMem_Free(gm_prof.snaps);
    PyMem_Free(gm_prof.restores);
    gm_prof.recs = NULL;
    gm_prof.snaps = gm_prof.restores = NULL;
    gm_prof.n_recs = gm_prof.n_snaps = gm_prof.snaps_cap = 0;
    gm_prof.n_restores = gm_prof.restores_cap = 0;
}

/* The batch is over (replayed or abandoned): its copies may be reused. */
static void forget_batch(void)
{
    gm_prof.n_recs = gm_prof.n_snaps = gm_prof.n_restores = 0;
    gm_prof.arena_used = 0;
}

static int push_copy(gm_prof_copy **list, size_t *n, size_t *cap, gm_prof_copy c)
{
    if (*n == *cap) {
        size_t want = *cap ? 2 * *cap : 16;
        gm_prof_copy *p = PyMem_Realloc(*list, want * sizeof *p);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *list = p;
        *cap = want;
    }
    (*list)[(*n)++] = c;
    return 0;
}

/* The address at or after `base` with like's remainder modulo GM_COPY_ALIGN. */
static char *aligned_like(char *base, const void *like)
{
    return base + (((uintptr_t)like - (uintptr_t)base) & (GM_COPY_ALIGN - 1));
}

/* Room in the arena for a copy of `like` (nbytes): its address. */
static void *carve(const void *like, size_t nbytes)
{
    char *at = aligned_like((char *)gm_prof.arena + gm_prof.arena_used, like);
    gm_prof.arena_used = (size_t)(at - (char *)gm_prof.arena) + nbytes;
    return at;
}

/* Whether the n bytes at a and b differ (anything but whole aligned words
 * counts as different: the caller then makes its own copy). */
static int differ(const void *a, const void *b, size_t n, int *out)
{
    *out = 1;
    if (n % 4 || (uintptr_t)a % 4 || (uintptr_t)b % 4)
        return 0;
    const gm_differs_params p = {a, b, n / 4, gm_prof.flag};
    const gm_launch_info info = {.variant = &differs_variant, .flags = GM_LAUNCH_INTERNAL};
    int h = 0;
    GM_CUDA(cudaMemsetAsync(gm_prof.flag, 0, sizeof(int), 0));
    if (gm_launch(&info, &p) < 0)
        return -1;
    GM_CUDA(cudaMemcpy(&h, gm_prof.flag, sizeof h, cudaMemcpyDeviceToHost)); /* GIL held */
    *out = h != 0;
    return 0;
fail:
    return -1;
}

/* A launch's buffers, each once (the same buffer passed twice, or an input
 * that is also the in-place result, is one buffer with both accesses);
 * map[b]: which of u info->buffers[b] is. */
static int unique_buffers(const gm_launch_info *info, gm_buffer *u, int *map)
{
    int nu = 0;
    for (int b = 0; b < info->n_buffers && b < GM_MAX_BUFS; b++) {
        const gm_buffer *x = &info->buffers[b];
        int j = 0;
        while (j < nu && !(u[j].ptr == x->ptr && u[j].nbytes == x->nbytes))
            j++;
        if (j == nu)
            u[nu++] = (gm_buffer){x->ptr, x->nbytes, 0};
        u[j].access |= x->access;
        map[b] = j;
    }
    return nu;
}

/* share[j]: an earlier copy of read-only buffer u[j] in this batch whose
 * contents equal the buffer's now, or NULL. */
static int find_shared(const gm_buffer *u, int nu, void **share)
{
    for (int j = 0; j < nu; j++) {
        share[j] = NULL;
        if (u[j].access != GM_READS)
            continue;
        for (size_t s = gm_prof.n_snaps; s-- > 0;) {
            const gm_prof_copy *c = &gm_prof.snaps[s];
            if (c->src != u[j].ptr || c->nbytes != u[j].nbytes)
                continue;
            int d;
            if (differ(u[j].ptr, c->dst, u[j].nbytes, &d) < 0)
                return -1;
            if (!d)
                share[j] = c->dst;
            break; /* the newest copy of this buffer decides */
        }
    }
    return 0;
}

/* Arena bytes the copies of u need (shared ones none), and the sink's. */
static size_t arena_need(const gm_buffer *u, int nu, void *const *share, size_t *sink)
{
    size_t need = 0;
    int sunk = 0;
    *sink = 0;
    for (int j = 0; j < nu; j++) {
        const size_t room = u[j].nbytes + GM_COPY_ALIGN;
        if (u[j].access == GM_WRITES && !sunk) {
            *sink = room;
            sunk = 1;
        } else if (u[j].access == (GM_READS | GM_WRITES)) {
            need += 2 * room; /* pristine and working */
        } else if (!share[j]) {
            need += room;     /* a read-only copy, or a second write-only buffer */
        }
    }
    return need;
}

/* A fresh device buffer of `want` bytes in place of *buf (empty batch only). */
static int regrow(void **buf, size_t *size, size_t want)
{
    gm_device_free(*buf, *size);
    *buf = NULL;
    *size = 0;
    if (gm_device_alloc(want, buf) < 0) {
        *buf = NULL;
        return -1;
    }
    *size = want;
    return 0;
}

/* Make room for a launch whose copies need `need` arena and `sink` sink
 * bytes: replay the batch if it is full, grow the memory if an empty batch
 * is too small.  1: room made; 0: it cannot fit (profile it on the spot);
 * -1: error.  *replayed: the batch was replayed (its copies are gone). */
static int make_room(size_t need, size_t sink, int *replayed)
{
    *replayed = 0;
    if (gm_prof.n_recs < gm_prof.max_ranges && gm_prof.arena_used + need <= gm_prof.arena_size &&
        sink <= gm_prof.sink_size)
        return 1;
    if (gm_prof.n_recs) {
        *replayed = 1;
        return gm_prof_block_finish() < 0 ? -1 : 1;
    }
    if (need + sink > gm_prof.arena_cap)
        return 0;
    /* Empty and too small: grow to what this launch needs, at least doubling
     * (a sweep of same-sized launches regrows once), within the cap. */
    size_t sink_want = sink > gm_prof.sink_size ? sink : gm_prof.sink_size;
    if (need + sink_want > gm_prof.arena_cap)
        sink_want = sink;
    if (sink_want != gm_prof.sink_size && regrow(&gm_prof.sink, &gm_prof.sink_size, sink_want) < 0)
        goto no_memory;
    if (need > gm_prof.arena_size) {
        size_t want = 2 * gm_prof.arena_size;
        if (want < ((size_t)64 << 20))
            want = (size_t)64 << 20;
        if (want < need)
            want = need;
        if (want > gm_prof.arena_cap - gm_prof.sink_size)
            want = gm_prof.arena_cap - gm_prof.sink_size;
        if (regrow(&gm_prof.arena, &gm_prof.arena_size, want) < 0)
            goto no_memory;
    }
    return 1;
no_memory:
    /* The device is full: nothing held, this launch on the spot. */
    PyErr_Clear();
    free_copies();
    return 0;
}

PyObject *gm_prof_block_record(const gm_launch_info *info, int *here)
{
    gm_buffer u[GM_MAX_BUFS];
    int map[GM_MAX_BUFS];
    void *share[GM_MAX_BUFS], *to[GM_MAX_BUFS], *moved[GM_MAX_BUFS];
    size_t sink = 0;
    int replayed = 0;
    T_BEGIN();
    *here = 0;
    if (info->n_buffers > GM_MAX_BUFS) {
        *here = 1;
        return NULL;
    }
    const int nu = unique_buffers(info, u, map);
    if (find_shared(u, nu, share) < 0)
        return NULL;
    size_t need = arena_need(u, nu, share, &sink);
    T_MARK(T_RECORD);
    int room = make_room(need, sink, &replayed); /* a replay times its own phases */
    if (room < 0)
        return NULL;
    if (room > 0 && replayed) {
        /* The batch and its copies are gone: nothing to share any more. */
        for (int j = 0; j < nu; j++)
            share[j] = NULL;
        need = arena_need(u, nu, share, &sink);
        room = make_room(need, sink, &replayed);
        if (room < 0)
            return NULL;
    }
    if (room == 0) {
        *here = 1;
        return NULL;
    }
    gm_t_ = gm_prof_now_ms();

    /* The copies, in stream order before the timed launch that follows. */
    gm_prof_record *rec = &gm_prof.recs[gm_prof.n_recs];
    rec->variant = info->variant;
    rec->first_restore = gm_prof.n_restores;
    rec->n_restore = 0;
    int sunk = 0;
    for (int j = 0; j < nu; j++) {
        if (u[j].access == GM_WRITES && !sunk) {
            to[j] = aligned_like(gm_prof.sink, u[j].ptr);
            sunk = 1;
        } else if (u[j].access == (GM_READS | GM_WRITES)) {
            void *pristine = carve(u[j].ptr, u[j].nbytes);
            to[j] = carve(u[j].ptr, u[j].nbytes);
            GM_CUDA(cudaMemcpyAsync(pristine, u[j].ptr, u[j].nbytes, cudaMemcpyDeviceToDevice, 0));
            if (push_copy(&gm_prof.restores, &gm_prof.n_restores, &gm_prof.restores_cap,
                          (gm_prof_copy){to[j], pristine, u[j].nbytes}) < 0)
                goto fail;
            rec->n_restore++;
        } else if (share[j]) {
            to[j] = share[j];
        } else if (u[j].access == GM_WRITES) {
            to[j] = carve(u[j].ptr, u[j].nbytes);
        } else {
            to[j] = carve(u[j].ptr, u[j].nbytes);
            GM_CUDA(cudaMemcpyAsync(to[j], u[j].ptr, u[j].nbytes, cudaMemcpyDeviceToDevice, 0));
            if (push_copy(&gm_prof.snaps, &gm_prof.n_snaps, &gm_prof.snaps_cap,
                          (gm_prof_copy){to[j], u[j].ptr, u[j].nbytes}) < 0)
                goto fail;
        }
    }
    for (int b = 0; b < info->n_buffers; b++)
        moved[b] = to[map[b]];
    info->moved(info, moved, rec->params);
    T_MARK(T_RECORD);

    PyObject *d = PyDict_New();
    if (d == NULL || PyList_Append(gm_prof.pending, d) < 0) {
        Py_XDECREF(d);
        goto fail;
    }
    gm_prof.n_recs++;
    gm_prof.launches++;
    return d;
fail:
    /* A half-made record is dropped; the batch so far stays. */
    gm_prof.n_restores = rec->first_restore;
    return NULL;
}

/* The pass loop's view of the batch: range k is recorded launch k, its
 * in-place buffers restored from their pristine copies before it, every pass
 * (the working copies start unwritten). */
static void recorded_range(const gm_prof_ranges *r, size_t k, const gm_variant **variant,
                           const void **params, char *name, size_t len)
{
    const gm_prof_record *rec = &gm_prof.recs[k];
    *variant = rec->variant;
    *params = rec->params;
    /* CUPTI merges ranges of the same name within a session: number them. */
    snprintf(name, len, "%s/%s #%zu", rec->variant->family, rec->variant->name, k);
}

static int recorded_restore(const gm_prof_ranges *r, size_t pass, size_t k)
{
    const gm_prof_record *rec = &gm_prof.recs[k];
    for (size_t i = 0; i < rec->n_restore; i++) {
        const gm_prof_copy *c = &gm_prof.restores[rec->first_restore + i];
        GM_CUDA(cudaMemcpyAsync(c->dst, c->src, c->nbytes, cudaMemcpyDeviceToDevice, 0));
    }
    return 0;
fail:
    return -1;
}

int gm_prof_block_finish(void)
{
    if (!gm_prof.block || gm_prof.n_recs == 0)
        return 0;
    size_t pass = 0;
    char whole[64];
    T_BEGIN();
    if (gm_prof_configure_pass0(gm_prof.n_recs) < 0)
        goto fail;
    T_MARK(T_CONFIG);
    snprintf(whole, sizeof whole, "a block of %zu launches", gm_prof.n_recs);
    const gm_prof_ranges ranges = {gm_prof.n_recs, recorded_range, recorded_restore, "replaying",
                                   whole, NULL};
    if (gm_prof_run_passes(&ranges, &pass) < 0)
        goto fail;
    gm_prof.last_passes_run = (double)pass;
    if (gm_prof_evaluate_batch() < 0)
        goto fail;
    forget_batch();
    return 0;
fail: {
    /* NaN for the batch's launches, keep the first error (the loop closed
     * what it opened). */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
    gm_prof_fill_pending_nan();
    forget_batch();
    PyErr_Restore(et, ev, tb);
    return -1;
}
}
