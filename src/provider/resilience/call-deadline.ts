import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The end (epoch ms) of the time budget of the call under way (LOOKUP_CALL_BUDGET_MS), set by the
 * failover around each provider it asks: ResilientUpstream cuts its attempt short when the budget ends
 * first. Carried out of band so that the port's signatures do not change; unset: no budget.
 */
export const callDeadline = new AsyncLocalStorage<number>();
