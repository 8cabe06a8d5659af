/**
 * How long an erasure's mark of a number is held (docs/privacy.md): by the lookup cache (no answer of the
 * number is cached meanwhile) and by the risk counters (no ask of it is counted meanwhile). Far longer
 * than any lookup can run (the longest call is PROVIDER_TIMEOUT_MS × attempts × providers, seconds; a
 * bulk chunk or round gives up within minutes), or than a verdict or feedback takes between reading and
 * writing the counters, so no work begun before the erasure outlives it; the number's lookups and asks
 * after it are answered, only not cached or counted for that hour.
 */
export const ERASURE_MARK_SECONDS = 3600;
