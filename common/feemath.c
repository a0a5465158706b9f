/* feemath.c - see feemath.h. */
#include "common/feemath.h"

#include <errno.h>
#include <string.h>

int fee_multiplier_parse(const char *s, uint32_t *milli)
{
	uint64_t whole = 0, frac = 0;
	int nfrac = 0;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > 100)
			return -EINVAL;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (++nfrac > 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
	}
	if (*p != '\0')
		return -EINVAL;
	for (; nfrac < 3; nfrac++)
		frac *= 10;
	whole = whole * FEE_MULT_SCALE + frac;
	if (whole <= FEE_MULT_SCALE || whole > FEE_MULT_MAX)
		return -EINVAL;
	*milli = (uint32_t)whole;
	return 0;
}

uint64_t fee_scale_up(uint64_t fee, uint32_t milli, uint64_t cap, bool *capped)
{
	/* 64 x 32 bits fits 96: use the 128-bit type for the exact product. */
	unsigned __int128 p = (unsigned __int128)fee * milli + (FEE_MULT_SCALE - 1);

	p /= FEE_MULT_SCALE;
	if (p > cap) {
		if (capped)
			*capped = true;
		return cap;
	}
	return (uint64_t)p;
}

uint64_t fee_for_step(uint64_t base, uint32_t milli, uint32_t n, uint64_t cap, bool *capped)
{
	uint64_t fee = base;

	if (capped)
		*capped = false;
	if (fee == 0)
		return 0; /* nothing to scale; also keeps huge n from looping */
	if (fee >= cap) {
		if (capped)
			*capped = fee > cap;
		return cap;
	}
	/* Once at the cap further steps cannot change the result: stop early,
	 * which also bounds the loop for huge n. */
	for (uint32_t i = 0; i < n && fee < cap; i++)
		fee = fee_scale_up(fee, milli, cap, capped);
	return fee;
}
