/*
 * layering_violation.c - a deliberate layering violation, the fixture that
 * shows tests/docs/layering.sh catches one: built as a library of its own,
 * never linked into a program, and handed to the check as if it were part
 * of common/. It calls the worker's claim_tick, so the check must fail and
 * name it (the ctest layering_catches_a_violation).
 */
struct worker;
void claim_tick(struct worker *w);
void layering_violation(struct worker *w);

void layering_violation(struct worker *w)
{
	claim_tick(w);
}
