/*
 * roles.c - the role table: which processes the supervisor forks, how many,
 * and which entry point each runs in the child (common/child.h is the
 * contract every entry point keeps). Only this file names the roles'
 * functions; the role libraries know nothing of each other or of the
 * supervisor (tests/docs/layering.sh checks both, by #include and by
 * symbol).
 *
 * Drain order: the roles that produce and dispatch work are told first; the
 * oracle drains last, because draining workers still read its fee
 * snapshots and follow its hints.
 */
#include "supervisor/supervisor.h"

#include "oracle/oracle_main.h"
#include "worker/worker_main.h"

const struct role sup_roles[] = {
	{.role = SHM_ROLE_ORACLE, .entry = oracle_main, .drains_last = true},
	{.role = SHM_ROLE_WORKER, .entry = worker_main, .per_worker = true},
};
const size_t sup_n_roles = sizeof(sup_roles) / sizeof(sup_roles[0]);
