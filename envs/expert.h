/* envs/expert.h — the scripted Craft expert of spec/craft.md §8.
 *
 * A pure function of the state: given a world (or world j of a batch) it
 * returns the next action towards the current subtask s_k — USE when the
 * agent faces the target kind, otherwise the first action of a shortest
 * action sequence found by breadth-first search over agent states
 * (x, y, dir), successors tried in the order DOWN, UP, LEFT, RIGHT, goal
 * tested on enqueue. It never plans USE on water or stone, so a target
 * walled in (or absent) is reported as unreachable, never looped on.
 * Targets: X for "get X", the workshop W for "make at W".
 *
 * Memory: no allocation; the search uses ~12 KB of stack. Threads: reentrant,
 * no state. Errors: statuses below; GR_EINVAL only for a too-small buffer.
 *
 *   int action, subtask;
 *   switch (craft_expert_act(&w, &action, &subtask)) {
 *   case CRAFT_EXPERT_OK: craft_world_step(&w, action, &st); break;
 *   case CRAFT_EXPERT_UNREACHABLE: skip this map (subtask says which);
 *   case CRAFT_EXPERT_FINISHED: the episode is over;
 *   }
 */
#ifndef GROVE_ENVS_EXPERT_H
#define GROVE_ENVS_EXPERT_H

#include <stdint.h>

#include "envs/craft.h"

enum craft_expert_status {
    CRAFT_EXPERT_OK = 0,          /* *action holds the next action */
    CRAFT_EXPERT_UNREACHABLE = 1, /* the target of subtask k cannot be
                                     faced (absent or walled in) */
    CRAFT_EXPERT_FINISHED = 2,    /* the episode is over (k = m or
                                     t = max_steps): nothing to do */
    CRAFT_EXPERT_TRUNCATED = 3    /* rollout only: the time limit came first */
};

/* Next action for world *w. *action gets 0..4 when the status is OK, else
 * -1; *subtask (may be NULL) gets k, the subtask worked on. Returns an enum
 * craft_expert_status. */
int craft_expert_act(const struct craft_world *w, int *action, int *subtask);

/* The same for worlds [begin, end) of a batch: actions[j] (0..4; USE where
 * the status is not OK, so the array can be stepped as is), status[j] an
 * enum craft_expert_status (may be NULL), subtask[j] = k (may be NULL). */
void craft_expert_act_batch(const struct craft_batch *b, int begin, int end,
                            uint8_t *actions, uint8_t *status,
                            uint8_t *subtask);

/* Runs the expert on a copy of *start until the episode ends or the expert
 * is stuck. actions[cap] receives the actions taken (cap >= max_steps - t
 * always suffices), *length their count. Returns OK (task done,
 * terminated), UNREACHABLE (stuck; the actions so far are kept),
 * TRUNCATED (the time limit came first), FINISHED (start was already
 * over), or GR_EINVAL when cap is too small for the steps taken. Use it to
 * test a map before recording a demonstration. */
int craft_expert_rollout(const struct craft_world *start, uint8_t *actions,
                         int cap, int *length);

#endif
