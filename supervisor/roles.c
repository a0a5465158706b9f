/*
 * roles.c - the role table: which processes the supervisor forks, how many,
 * and which entry point each runs in the child (common/child.h is the
 * contract every entry point keeps). Only this file names the roles'
 * functions; the role libraries know nothing of each other or of the
 * supervisor (tests/docs/layering.sh checks both, by #include and by
 * symbol).
 *
 * Drain order: the roles that produce and dispatch work are told first (the
 * gateway stops taking requests with them); the oracle drains last, because
 * draining workers still read its fee snapshots and follow its hints.
 *
 * The gateway is forked unless OUTBOX_HTTP_ADDR is off.
 */
#include "supervisor/supervisor.h"

#include "ops/gateway/gateway_main.h"
#include "oracle/oracle_main.h"
#include "worker/worker_main.h"

#include <string.h>

static bool gateway_wanted(const struct outbox_config *cfg)
{
	return strcmp(cfg->http_addr, "off") != 0;
}

const struct role sup_roles[] = {
	{.role = SHM_ROLE_ORACLE, .entry = oracle_main, .drains_last = true},
	{.role = SHM_ROLE_GATEWAY, .entry = gateway_main, .wanted = gateway_wanted},
	{.role = SHM_ROLE_WORKER, .entry = worker_main, .per_worker = true},
};
const size_t sup_n_roles = sizeof(sup_roles) / sizeof(sup_roles[0]);
