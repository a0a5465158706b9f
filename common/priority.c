/* priority.c - see priority.h. */
#include "common/priority.h"

#include <string.h>

static const char *const prio_names[OP_PRIO_COUNT] = {"CRITICAL", "NORMAL", "LOW"};
static const char *const kind_names[OP_KIND_COUNT] = {"DEPOSIT", "WITHDRAW", "REBALANCE",
						      "REFERRAL_REWARD"};

static int parse_name(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

const char *op_priority_name(enum op_priority p)
{
	return (unsigned)p < OP_PRIO_COUNT ? prio_names[p] : NULL;
}

int op_priority_parse(const char *s, enum op_priority *out)
{
	int i = parse_name(s, prio_names, OP_PRIO_COUNT);

	if (i < 0)
		return -1;
	*out = (enum op_priority)i;
	return 0;
}

const char *op_kind_name(enum op_kind k)
{
	return (unsigned)k < OP_KIND_COUNT ? kind_names[k] : NULL;
}

int op_kind_parse(const char *s, enum op_kind *out)
{
	int i = parse_name(s, kind_names, OP_KIND_COUNT);

	if (i < 0)
		return -1;
	*out = (enum op_kind)i;
	return 0;
}

enum op_priority op_kind_default_priority(enum op_kind k)
{
	switch (k) {
	case OP_KIND_WITHDRAW:
		return OP_PRIO_CRITICAL;
	case OP_KIND_REBALANCE:
		return OP_PRIO_LOW;
	default:
		return OP_PRIO_NORMAL;
	}
}

static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

int op_order_cmp(const struct op_order_key *a, const struct op_order_key *b)
{
	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->created_us != b->created_us)
		return cmp_i64(a->created_us, b->created_us);
	return cmp_i64(a->id, b->id);
}

int op_order_qsort_cmp(const void *a, const void *b)
{
	return op_order_cmp(a, b);
}
