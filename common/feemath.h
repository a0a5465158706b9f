/*
 * feemath.h - fee escalation arithmetic (pure, no I/O).
 *
 * Each fee bump multiplies the previous bid by OUTBOX_FEE_BUMP_MULTIPLIER,
 * compounding, and never exceeds OUTBOX_MAX_ABS_FEE. The multiplier is held
 * in thousandths (2.0 -> 2000) so the arithmetic is exact integer math:
 * repeated floating-point multiplication would drift, and two processes must
 * compute the same bid for the same inputs. Every step rounds up, so a bump
 * always bids strictly more than the previous one (until the cap).
 */
#ifndef OUTBOX_COMMON_FEEMATH_H
#define OUTBOX_COMMON_FEEMATH_H

#include <stdbool.h>
#include <stdint.h>

#define FEE_MULT_SCALE 1000u
#define FEE_MULT_MAX   (100u * FEE_MULT_SCALE)

/*
 * Parse a multiplier such as "2", "1.5" or "1.125" (at most three decimals)
 * into thousandths. Accepts only 1.0 < m <= 100. Returns 0 or -EINVAL.
 */
int fee_multiplier_parse(const char *s, uint32_t *milli);

/*
 * ceil(fee * milli / 1000), saturating at cap. Sets *capped when the cap
 * bound the result (the exact product was larger, or fee itself was).
 * Returns the new fee; never overflows whatever the inputs.
 */
uint64_t fee_scale_up(uint64_t fee, uint32_t milli, uint64_t cap, bool *capped);

/*
 * The bid for escalation step n (0 = the first submission): ceil-compounded
 * base * m^n, capped at cap. A base above the cap is capped too.
 */
uint64_t fee_for_step(uint64_t base, uint32_t milli, uint32_t n, uint64_t cap, bool *capped);

#endif
