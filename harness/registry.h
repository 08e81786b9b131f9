/* registry.h — what the plug-in tables share (drafters, topologies, verifiers, tree schedulers,
 * selectors: docs/ARCHITECTURE.md "Adding a plug-in"): lookup by name and the ", "-joined name
 * list that validation errors, `--help` and the README generator print. Each kind keeps its own
 * typed table and `_at`; it hands its rows' names to these helpers through name_at.
 *
 *     static const char *name_at(int i) { const arb_x_i *x = arb_x_at(i); return x ? x->name : NULL; }
 *     const arb_x_i *arb_x_find(const char *name) { return arb_x_at(arb_registry_index(name_at, name, false)); }
 */
#ifndef ARB_REGISTRY_H
#define ARB_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

/* The name of row i of a table, NULL for i past its end. */
typedef const char *(*arb_registry_name_fn)(int i);

/* Index of the row called name (ignore_case: ASCII case-insensitive), -1 if none or name NULL. */
int arb_registry_index(arb_registry_name_fn name_at, const char *name, bool ignore_case);

/* The rows' names joined by ", " into buf (cap > 0; truncated to fit). Returns buf. */
const char *arb_registry_names(arb_registry_name_fn name_at, char *buf, size_t cap);

#endif
