import { parseArgs } from 'node:util';
import { checkSdkSigning } from './sdk-signing';
import { SIMULATED_FAULTS, SIMULATOR_DEFAULTS, SimulatedFault, startUpstreamSimulator } from './simulator';

const USAGE = `Upstream simulator for the HLR Lookups API v2 protocol (docs/upstream-hlr-lookups.md).

  npm run upstream -- [--port 4010] [--host 127.0.0.1] [--latency-ms 150] [--error-rate 0.05] [--outage]
                      [--key ${SIMULATOR_DEFAULTS.key}] [--secret ${SIMULATOR_DEFAULTS.secret}]
                      [--fault <fault>] [--fault-for <e164>=<fault> ...] [--slow-ms 10000] [--giant-bytes 268435456]
                      [--rate-limit <requests>/<seconds>] [--balance 100]
  npm run upstream -- --check-sdk     sign requests the way each official SDK does, against a fresh simulator

Faults (--fault: every lookup; --fault-for: one number, repeatable):
  ${SIMULATED_FAULTS.join(', ')}

Point the service at it with PROVIDER=hlr-lookups HLR_LOOKUPS_URL=http://127.0.0.1:4010
HLR_LOOKUPS_KEY=<key> HLR_LOOKUPS_SECRET=<secret>.`;

function numberOption(name: string, value: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > max) throw new Error(`--${name} must be a number between 0 and ${max}`);
  return parsed;
}

function faultOption(name: string, value: string): SimulatedFault {
  if (!(SIMULATED_FAULTS as readonly string[]).includes(value)) throw new Error(`--${name}: unknown fault "${value}"`);
  return value as SimulatedFault;
}

function faultsByNumber(entries: string[] | undefined): Record<string, SimulatedFault> {
  const faults: Record<string, SimulatedFault> = {};
  for (const entry of entries ?? []) {
    const match = /^(\+\d{2,15})=(.+)$/.exec(entry);
    if (!match) throw new Error(`--fault-for takes <e164>=<fault>, e.g. +447400123456=rejected (got "${entry}")`);
    faults[match[1]] = faultOption('fault-for', match[2]);
  }
  return faults;
}

function rateLimitOption(value: string | undefined): { requests: number; windowSeconds: number } | null {
  if (value === undefined) return null;
  const match = /^(\d+)\/(\d+)$/.exec(value);
  if (!match || Number(match[1]) < 1 || Number(match[2]) < 1) throw new Error('--rate-limit takes <requests>/<seconds>, e.g. 10/1');
  return { requests: Number(match[1]), windowSeconds: Number(match[2]) };
}

/** Starts a simulator on a free port, signs requests as each SDK does, prints the outcome; exit 1 on any mismatch. */
async function checkSdk(): Promise<void> {
  const simulator = await startUpstreamSimulator();
  try {
    const results = await checkSdkSigning(`${simulator.url}/api/v2`, SIMULATOR_DEFAULTS.key, SIMULATOR_DEFAULTS.secret);
    let failed = 0;
    for (const result of results) {
      const ok = result.status === 200 && result.wrongSecretStatus === 401 && result.sameAsAdapter;
      if (!ok) failed += 1;
      console.log(
        `${ok ? 'ok  ' : 'FAIL'} ${result.sdk.padEnd(4)} ${result.method.padEnd(4)} ${result.endpoint.padEnd(12)} ` +
          `signed: ${result.status}, wrong secret: ${result.wrongSecretStatus}, same headers as the adapter: ${result.sameAsAdapter}`,
      );
    }
    console.log(failed === 0 ? `[upstream-simulator] all ${results.length} SDK-signed requests agree` : `[upstream-simulator] ${failed} mismatches`);
    process.exitCode = failed === 0 ? 0 : 1;
  } finally {
    await simulator.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '4010' },
      host: { type: 'string', default: SIMULATOR_DEFAULTS.host },
      'latency-ms': { type: 'string' },
      'error-rate': { type: 'string' },
      outage: { type: 'boolean', default: false },
      key: { type: 'string', default: SIMULATOR_DEFAULTS.key },
      secret: { type: 'string', default: SIMULATOR_DEFAULTS.secret },
      fault: { type: 'string' },
      'fault-for': { type: 'string', multiple: true },
      'slow-ms': { type: 'string' },
      'giant-bytes': { type: 'string' },
      'rate-limit': { type: 'string' },
      balance: { type: 'string' },
      'check-sdk': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values['check-sdk']) return checkSdk();
  const simulator = await startUpstreamSimulator({
    port: numberOption('port', values.port, 4010, 65535),
    host: values.host,
    latencyMs: numberOption('latency-ms', values['latency-ms'], 0),
    errorRate: numberOption('error-rate', values['error-rate'], 0, 1),
    outage: values.outage,
    key: values.key,
    secret: values.secret,
    fault: values.fault === undefined ? null : faultOption('fault', values.fault),
    faultsByNumber: faultsByNumber(values['fault-for']),
    slowMs: numberOption('slow-ms', values['slow-ms'], SIMULATOR_DEFAULTS.slowMs),
    giantBytes: numberOption('giant-bytes', values['giant-bytes'], SIMULATOR_DEFAULTS.giantBytes),
    rateLimit: rateLimitOption(values['rate-limit']),
    balance: numberOption('balance', values.balance, SIMULATOR_DEFAULTS.balance),
  });
  console.log(`[upstream-simulator] listening on ${simulator.url} (key ${values.key})`);
  const stop = () => {
    void simulator.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`[upstream-simulator] ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  process.exit(1);
});
