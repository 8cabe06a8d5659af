import { FailoverProvider, FailoverMember } from './failover-provider';
import type { CheckAnswer } from '../checks/check-definition';
import { answeredNow, CircuitBreakerState, Lane, LookupProvider, ProviderUnavailableError, Upstream } from './lookup-provider';

/** A provider that answers or fails as told, and records that it was asked. */
class ScriptedProvider extends LookupProvider implements Upstream {
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
  async answer(check: string): Promise<CheckAnswer> {
    if (this.circuit === 'open') {
      this.refused += 1;
      throw new ProviderUnavailableError(`circuit breaker open: the ${this.provider} upstream failed repeatedly`, 'circuit_open');
    }
    this.asked += 1;
    if (this.failing) throw new ProviderUnavailableError(`${this.provider} down`, this.failReason);
    return answeredNow(check, this.provider, { status: 'CONNECTED', carrier: this.provider });
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
