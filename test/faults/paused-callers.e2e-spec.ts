import { request } from 'node:http';
import { startUpstreamSimulator, UpstreamSimulator } from '../../tools/upstream-simulator/simulator';
import { eventually } from '../helpers/eventually';
import { START_DEADLINE_MS } from '../helpers/service-process';
import { hlrLookupsEnv } from '../provider-helpers';
import { createAccountOver, HttpAccount, Instance, startInstances } from './helpers/instances';

/** Generous: only a failure reaches it, on a machine as busy as it gets. */
const EVENT_DEADLINE_MS = 60_000;
const CALLS = 5;
const CLIENT_TIMEOUT_MS = 1000;

/**
 * A /filter call from a client that gives up after CLIENT_TIMEOUT_MS (destroying its socket), as an
 * HTTP client with a timeout does; resolves once it has given up (or, should it be answered, then).
 */
function impatientCall(url: string, account: HttpAccount, requestId: string, phone: string): Promise<'gave up' | number> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ phone });
    const call = request(`${url}/api/v1/filter`, {
      method: 'POST',
      headers: { ...account.auth, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'X-Request-Id': requestId },
      agent: false,
    });
    const timer = setTimeout(() => {
      call.destroy();
      resolve('gave up');
    }, CLIENT_TIMEOUT_MS);
    call.on('response', (response) => {
      clearTimeout(timer);
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    call.on('error', () => undefined);
    call.end(body);
  });
}

/** The instance's counter of calls not charged because their client had gone. */
async function clientGoneCount(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^phone_filter_calls_not_charged_total\{reason="client_gone"\} (\S+)$/m.exec(text)?.[1] ?? 0);
}

/**
 * Issue 35 finding 1, reproduced as it was found: an instance paused (SIGSTOP) while five clients send
 * /filter calls and give up after 1 s, then resumed. The old service dropped the calls it noticed gone
 * while reading their bodies and charged (and settled) the others seconds after their clients had left.
 */
describe('callers that gave up while the instance was paused', () => {
  let simulator: UpstreamSimulator;
  let instance: Instance;
  let account: HttpAccount;

  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ latencyMs: 20 });
    [instance] = await startInstances(1, hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '5000' }));
    account = await createAccountOver(instance.url, { plan: 'enterprise', credits: 1000 });
  }, 2 * START_DEADLINE_MS);
  afterAll(async () => {
    await instance?.kill();
    await simulator?.close();
  });

  it('are not charged', async () => {
    const child = instance.process!.child;
    const goneBefore = await clientGoneCount(instance.url);
    child.kill('SIGSTOP');
    let outcomes: Array<'gave up' | number>;
    try {
      outcomes = await Promise.all(
        Array.from({ length: CALLS }, (_, i) => impatientCall(instance.url, account, `paused-caller-${i}`, `+4474001${String(30_011 + i * 13)}`)),
      );
    } finally {
      child.kill('SIGCONT');
    }
    expect(outcomes).toEqual(Array(CALLS).fill('gave up'));
    // The event: each call has met its end in the instance, dropped before routing (its access line for
    // no route: its body was cut), or refused right before its charge or refunded at its settle (one
    // "not charged: client_gone" line).
    // A call the old service charged meets neither: the wait then ends at its deadline, and the ledger fails.
    const output = () => instance.process!.output();
    const droppedEarly = (i: number) => new RegExp(`"requestId":"paused-caller-${i}"[^\\n]*"route":"\\(unmatched\\)"[^\\n]*"aborted":true`).test(output());
    const refusedAtCharge = (i: number) => output().includes(`request paused-caller-${i} not charged: client_gone`);
    const ends = await eventually(
      () => Array.from({ length: CALLS }, (_, i) => (refusedAtCharge(i) ? 'at charge' : droppedEarly(i) ? 'early' : 'running')),
      (all) => !all.includes('running'),
      EVENT_DEADLINE_MS,
      100,
    );
    console.info(`paused instance: the ${CALLS} calls given up on ${JSON.stringify(ends)}`);
    const usage = (await (await fetch(`${instance.url}/api/v1/usage`, { headers: account.auth })).json()) as { entries: Array<{ type: string }> };
    // A call whose client's FIN was read only after its charge (on a busy machine) is refunded at its
    // settle: a CHARGE with its REFUND, and the same log line. A charge kept is the defect.
    const types = usage.entries.map((entry) => entry.type);
    expect(types.filter((type) => type === 'TOPUP')).toEqual(['TOPUP']);
    expect(types.filter((type) => type === 'CHARGE').length).toBe(types.filter((type) => type === 'REFUND').length);
    const balance = (await (await fetch(`${instance.url}/api/v1/balance`, { headers: account.auth })).json()) as { balance: number };
    expect(balance.balance).toBe(1000);
    expect(ends).not.toContain('running');
    expect((await clientGoneCount(instance.url)) - goneBefore).toBe(ends.filter((end) => end === 'at charge').length);
  }, 2 * EVENT_DEADLINE_MS);
});
