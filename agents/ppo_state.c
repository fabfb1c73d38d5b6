/* The trainer state of a PPO checkpoint, the trainers' shared layout and
 * its save and load (see agents/ppo_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "agents/ppo_internal.h"
#include "core/error.h"
#include "kernels/checkpoint.h"
#include "train/mpi.h"

void ppo_state_begin(struct ppo_state_layout *L, uint32_t magic, int E,
                     int d, int64_t *iteration, int64_t *global_step,
                     int64_t *total_episodes)
{
    memset(L, 0, sizeof *L);
    L->magic = magic;
    L->E = E;
    L->d = d;
    L->iteration = iteration;
    L->global_step = global_step;
    L->total_episodes = total_episodes;
}

void ppo_state_add(struct ppo_state_layout *L, void *p, size_t size)
{
    if (L->n < PPO_STATE_MAX_ARRAYS) {
        L->a[L->n].p = p;
        L->a[L->n].size = size;
    }
    L->n++; /* past the capacity: ppo_state_init refuses the layout */
}

void ppo_state_add_batch(struct ppo_state_layout *L, struct craft_batch *b)
{
    L->batch = b;
    ppo_state_add(L, b->grid, (size_t)b->cells);
    ppo_state_add(L, b->x, 1);
    ppo_state_add(L, b->y, 1);
    ppo_state_add(L, b->dir, 1);
    ppo_state_add(L, b->k, 1);
    ppo_state_add(L, b->task, 1);
    ppo_state_add(L, b->t, 2);
    ppo_state_add(L, b->inventory, CRAFT_N_KINDS * 2);
    ppo_state_add(L, b->ret, 4);
    ppo_state_add(L, b->episode, 8);
    ppo_state_add(L, b->seed, 8);
}

static size_t state_size(const struct ppo_state_layout *L)
{
    size_t per_world = 0;
    for (int i = 0; i < L->n; i++) {
        per_world += L->a[i].size;
    }
    return 64 + (size_t)L->E * per_world;
}

int ppo_state_init(struct ppo_state *s, struct gr_ctx *ctx,
                   const struct ppo_state_layout *L, const char *what)
{
    if (L->n > PPO_STATE_MAX_ARRAYS) {
        return gr_error(GR_EINVAL, "%s: %d state arrays, at most %d", what,
                        L->n, PPO_STATE_MAX_ARRAYS);
    }
    s->bytes = state_size(L);
    s->host = calloc(s->bytes + 4, 1);
    s->buf = gr_buffer_new(ctx, "ppo.state", GR_I32,
                           gr_shape1((int64_t)(s->bytes + 3) / 4));
    if (s->host == NULL || s->buf == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory for the state", what);
    }
    return 0;
}

void ppo_state_free(struct ppo_state *s)
{
    free(s->host);
    memset(s, 0, sizeof *s);
}

/* Serialises (dir 0) or restores (dir 1) the state of L in buf. */
static int state_io(const struct ppo_state_layout *L, uint8_t *buf, int dir)
{
    uint32_t head[4] = {L->magic, 1u, (uint32_t)L->E, (uint32_t)L->d};
    if (dir == 1) {
        uint32_t got[4];
        memcpy(got, buf, sizeof got);
        if (memcmp(got, head, sizeof got) != 0) {
            return gr_error(GR_EFORMAT, "trainer state of another shape "
                                        "(%u worlds, hidden %u; this run "
                                        "has %u, %u)",
                            got[2], got[3], head[2], head[3]);
        }
    }
    int64_t *counters[3] = {L->iteration, L->global_step, L->total_episodes};
    if (dir == 0) {
        memcpy(buf, head, sizeof head);
    }
    for (int i = 0; i < 3; i++) {
        if (dir == 0) {
            memcpy(buf + sizeof head + 8 * i, counters[i], 8);
        } else {
            memcpy(counters[i], buf + sizeof head + 8 * i, 8);
        }
    }
    size_t at = 64;
    for (int i = 0; i < L->n; i++) {
        size_t n = (size_t)L->E * L->a[i].size;
        if (dir == 0) {
            memcpy(buf + at, L->a[i].p, n);
        } else {
            memcpy(L->a[i].p, buf + at, n);
        }
        at += n;
    }
    return 0;
}

/* With MPI: every process's worlds into every process's copy (each acts
 * its own share of them), so the state is the whole run's. */
static int gather_worlds(const struct ppo_state_layout *L)
{
    if (train_mpi_size() <= 1) {
        return 0;
    }
    for (int i = 0; i < L->n; i++) {
        int rc = train_allgather_shares(L->a[i].p, L->a[i].size, L->E);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

int ppo_state_save(struct ppo_state *s, struct gr_ctx *ctx,
                   const struct ppo_state_layout *L, const char *path,
                   int force, char *(*config)(const void *self),
                   const void *self)
{
    int rc = gather_worlds(L);
    if (rc < 0 || train_mpi_rank() != 0) {
        return rc; /* process 0 writes */
    }
    memset(s->host, 0, s->bytes + 4);
    rc = state_io(L, s->host, 0);
    if (rc == 0) {
        rc = gr_tensor_set_host(s->buf, s->host);
    }
    char *text = rc == 0 ? config(self) : NULL;
    if (rc == 0 && text == NULL) {
        rc = GR_EINVAL;
    }
    if (rc == 0) {
        rc = gr_checkpoint_save(ctx, path, text, GR_CKPT_ALL, force);
    }
    free(text);
    return rc;
}

int ppo_state_load(struct ppo_state *s, struct gr_ctx *ctx,
                   const struct ppo_state_layout *L, const char *path,
                   float *obs, int O)
{
    int rc = gr_checkpoint_load(ctx, path, GR_CKPT_ALL, NULL);
    if (rc == 0) {
        rc = gr_tensor_to_host(s->buf, s->host);
    }
    if (rc == 0) {
        rc = state_io(L, s->host, 1);
        if (rc < 0) {
            rc = gr_error_wrap(rc, "%s", path);
        }
    }
    for (int e = 0; rc == 0 && e < L->E; e++) {
        craft_batch_observe(L->batch, e, obs + (size_t)e * O);
    }
    return rc;
}
