import { FailoverProvider, FailoverMember } from './failover-provider';
import { parseLookupProviders } from '../../config/lookup-providers';
import { ProviderUnavailableError } from '../port/upstream-failure';
import type { CheckAnswer } from '../../checks/check-definition';
import { answeredNow, CircuitBreakerState, Lane, LookupProvider, Upstream } from '../port/lookup-provider';
import { ManualClock } from '../../../test/helpers/manual-clock';

/** The tests' clock: a scripted provider's latency moves it on. */
const clock = new ManualClock(1_000_000);

/** A provider that answers or fails as told, and records that it was asked. */
class ScriptedProvider extends LookupProvider implements Upstream {
  /** How long each answer takes, on the tests' clock. */
  latencyMs = 0;
  /** The checks it offers (its descriptor's list); every check when undefined. */
  offered?: readonly string[];
  /** When set, each answer waits for it (a call under way). */
  gate?: Promise<void>;
  readonly simulated = true;
  asked = 0;
  /** Calls its breaker refused without a request (as cockatiel does while open and no trial is due). */
  refused = 0;
  failing = false;
  /** network: a failure of its health; upstream_error: one that says nothing about it. */
  failReason: 'network' | 'upstream_error' = 'network';
  circuit: CircuitBreakerState = 'closed';
  constructor(readonly provider: string) {
    super();
  }
  upstreams(): readonly Upstream[] {
    return [this];
  }
  circuitState(_lane: Lane): CircuitBreakerState {
    return this.circuit;
  }
  async ping(): Promise<void> {}
  offers(check: string): boolean {
    return this.offered === undefined || this.offered.includes(check);
  }
  async answer(check: string): Promise<CheckAnswer> {
    if (!this.offers(check)) throw new Error(`${this.provider} was asked for ${check}, which it does not offer`);
    if (this.circuit === 'open') {
      this.refused += 1;
      throw new ProviderUnavailableError(`circuit breaker open: the ${this.provider} upstream failed repeatedly`, 'circuit_open');
    }
    this.asked += 1;
    if (this.gate) await this.gate;
    await clock.advance(this.latencyMs);
    if (this.failing) throw new ProviderUnavailableError(`${this.provider} down`, this.failReason);
    return answeredNow(check, this.provider, { status: 'CONNECTED', carrier: this.provider }, clock.date());
  }
}

const member = (provider: ScriptedProvider): FailoverMember => ({ provider, upstream: provider });

describe('FailoverProvider', () => {
  let a: ScriptedProvider;
  let b: ScriptedProvider;
  let failover: FailoverProvider;
  beforeEach(() => {
    a = new ScriptedProvider('a');
    b = new ScriptedProvider('b');
    failover = new FailoverProvider([member(a), member(b)]);
  });

  it('asks in order and moves on after a refundable failure', async () => {
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'a', fields: { carrier: 'a' } });
    a.failing = true;
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'b', fields: { carrier: 'b' } });
    expect(failover.failovers().get('a')).toBe(1);
  });

  it('leaves an open breaker to refuse (no request) and moves on; never skips it, or its half-open trial would never come', async () => {
    a.circuit = 'open';
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'b', fields: { carrier: 'b' } });
    expect({ asked: a.asked, refused: a.refused }).toEqual({ asked: 0, refused: 1 });
    a.circuit = 'closed'; // its trial passed
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'a', fields: { carrier: 'a' } });
  });

  it('refusals by an open breaker are no outcomes: they never lift a demotion', async () => {
    a.failing = true;
    for (let i = 0; i < 10; i++) await failover.answer('network_status', '+447400123456');
    a.circuit = 'open';
    b.failing = true; // both asked: a (demoted, last) refused by its breaker each time; b not demoted by it
    b.failReason = 'upstream_error';
    for (let i = 0; i < 15; i++) await expect(failover.answer('network_status', '+447400123456')).rejects.toThrow();
    expect(a.refused).toBe(15);
    a.circuit = 'closed';
    a.failing = false;
    b.failing = false;
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'b', fields: { carrier: 'b' } });
  });

  it('fails only when every provider failed, with the last failure', async () => {
    a.failing = true;
    b.failing = true;
    await expect(failover.answer('network_status', '+447400123456')).rejects.toThrow('b down');
  });

  it('asks a provider whose recent calls mostly failed for its health last, and first again once it recovers', async () => {
    a.failing = true;
    for (let i = 0; i < 10; i++) await failover.answer('network_status', '+447400123456');
    a.failing = false;
    a.asked = 0;
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'b', fields: { carrier: 'b' } });
    expect(a.asked).toBe(0);
    b.failing = true; // the demoted one is still asked when the others fail, and its successes count
    for (let i = 0; i < 10; i++) await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'a', fields: { carrier: 'a' } });
    b.failing = false;
    await expect(failover.answer('network_status', '+447400123456')).resolves.toMatchObject({ provider: 'a', fields: { carrier: 'a' } });
  });
});

describe('FailoverProvider: demotion by health (LOOKUP_DEMOTE_*)', () => {
  const demotion = { windowMs: 30_000, windowCalls: 10, minCalls: 4, failureRate: 0.5, latencyMs: 1_000 };
  let a: ScriptedProvider;
  let b: ScriptedProvider;
  let failover: FailoverProvider;
  const order = () => failover.candidates('network_status', '+447400123456', 'interactive').map((m) => m.upstream.provider);
  const ask = () => failover.answer('network_status', '+447400123456');
  beforeEach(() => {
    a = new ScriptedProvider('a');
    b = new ScriptedProvider('b');
    failover = new FailoverProvider([member(a), member(b)], undefined, Infinity, demotion, clock);
  });

  it('a slow primary is asked after the backup once the window holds enough slow answers; never skipped', async () => {
    a.latencyMs = 1_500;
    for (let i = 0; i < 3; i++) await expect(ask()).resolves.toMatchObject({ provider: 'a' });
    expect(order()).toEqual(['a', 'b']); // 3 outcomes: fewer than minCalls
    await ask();
    expect(order()).toEqual(['b', 'a']);
    expect(failover.recentHealth('a', 'interactive')).toMatchObject({ calls: 4, demoted: true, reason: 'latency', median_latency_ms: 1_500 });
    expect(failover.recentHealth('a', 'batch')).toMatchObject({ calls: 0, demoted: false }); // per lane
    b.failing = true; // still asked when the healthy one fails
    await expect(ask()).resolves.toMatchObject({ provider: 'a' });
  });

  it('once its slow outcomes leave the window, one trial call asks it first; a fast answer promotes it back', async () => {
    a.latencyMs = 1_500;
    for (let i = 0; i < 4; i++) await ask();
    a.latencyMs = 10; // recovered, but asked last: nothing new about it
    for (let i = 0; i < 5; i++) await expect(ask()).resolves.toMatchObject({ provider: 'b' });
    expect(order()).toEqual(['b', 'a']);
    await clock.advance(demotion.windowMs);
    expect(failover.recentHealth('a', 'interactive')).toMatchObject({ calls: 0, demoted: true, reason: 'recovering' });
    a.asked = 0;
    await expect(ask()).resolves.toMatchObject({ provider: 'a' }); // the trial
    expect(a.asked).toBe(1);
    expect(failover.recentHealth('a', 'interactive')).toMatchObject({ calls: 1, demoted: false });
    expect(order()).toEqual(['a', 'b']);
  });

  it('while the trial is under way the other calls still ask it last; a slow trial keeps it demoted for another window', async () => {
    a.latencyMs = 1_500;
    for (let i = 0; i < 4; i++) await ask();
    await clock.advance(demotion.windowMs);
    let release!: () => void;
    a.gate = new Promise<void>((resolve) => (release = resolve));
    const trial = ask(); // still slow
    expect(order()).toEqual(['b', 'a']);
    await expect(ask()).resolves.toMatchObject({ provider: 'b' });
    release();
    await expect(trial).resolves.toMatchObject({ provider: 'a' });
    expect(failover.recentHealth('a', 'interactive')).toMatchObject({ calls: 1, demoted: true, reason: 'recovering' });
    a.asked = 0;
    for (let i = 0; i < 3; i++) await expect(ask()).resolves.toMatchObject({ provider: 'b' });
    expect(a.asked).toBe(0); // one trial a window, not one per call
    await clock.advance(demotion.windowMs);
    a.latencyMs = 10;
    await expect(ask()).resolves.toMatchObject({ provider: 'a' });
    expect(order()).toEqual(['a', 'b']);
  });

  it('never asks a provider for a check it does not offer: no failover counted, no outcome for its health, still first for the checks it offers', async () => {
    a.offered = ['line_type'];
    for (let i = 0; i < 10; i++) await expect(ask()).resolves.toMatchObject({ provider: 'b' });
    expect(a.asked).toBe(0);
    expect(failover.failovers().get('a')).toBeUndefined();
    expect(failover.recentHealth('a', 'interactive')).toMatchObject({ calls: 0, demoted: false });
    expect(failover.candidates('network_status', '+447400123456', 'interactive').map((member) => member.upstream.provider)).toEqual(['b']);
    expect(order()).toEqual(['b']);
    await expect(failover.answer('line_type', '+447400123456')).resolves.toMatchObject({ provider: 'a' });
  });

  it('a check that no member offers: refused as not_offered without asking anyone, no failover counted', async () => {
    a.offered = ['line_type'];
    b.offered = ['line_type'];
    expect(failover.offers('network_status')).toBe(false);
    await expect(ask()).rejects.toMatchObject({ reason: 'upstream_error', kind: 'not_offered' });
    expect({ a: a.asked, b: b.asked, failovers: failover.failovers().size }).toEqual({ a: 0, b: 0, failovers: 0 });
  });

  it('cost-aware between equals: LOOKUP_PROVIDERS=a|b puts the cheaper first; a demoted cheap one goes after the dearer healthy one', async () => {
    const { entries } = parseLookupProviders('a|b,c', {
      A_ADAPTER: 'sandbox',
      A_PRICE: '0.02',
      B_ADAPTER: 'sandbox',
      B_PRICE: '0.01',
      C_ADAPTER: 'sandbox',
    });
    const scripted = new Map(entries.map((entry) => [entry.id, new ScriptedProvider(entry.id)]));
    failover = new FailoverProvider([...scripted.values()].map(member), undefined, Infinity, demotion, clock);
    expect(order()).toEqual(['b', 'a', 'c']);
    scripted.get('b')!.failing = true;
    for (let i = 0; i < 4; i++) await expect(ask()).resolves.toMatchObject({ provider: 'a' });
    expect(order()).toEqual(['a', 'c', 'b']);
    scripted.get('a')!.latencyMs = 5_000;
    for (let i = 0; i < 4; i++) await ask();
    expect(order()).toEqual(['c', 'b', 'a']); // both demoted: among them, the route's order (cheapest first) stands
  });
});
