import { parseArgs } from 'node:util';
import { SIMULATOR_DEFAULTS, startUpstreamSimulator } from './simulator';

const USAGE = `Upstream simulator for the HLR Lookups API v2 protocol.

  npm run upstream -- [--port 4010] [--host 127.0.0.1] [--latency-ms 150] [--error-rate 0.05] [--outage]
                      [--key ${SIMULATOR_DEFAULTS.key}] [--secret ${SIMULATOR_DEFAULTS.secret}]

Point the service at it with PROVIDER=hlr-lookups HLR_LOOKUPS_URL=http://127.0.0.1:4010
HLR_LOOKUPS_KEY=<key> HLR_LOOKUPS_SECRET=<secret>.`;

function numberOption(name: string, value: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > max) throw new Error(`--${name} must be a number between 0 and ${max}`);
  return parsed;
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
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const simulator = await startUpstreamSimulator({
    port: numberOption('port', values.port, 4010, 65535),
    host: values.host,
    latencyMs: numberOption('latency-ms', values['latency-ms'], 0),
    errorRate: numberOption('error-rate', values['error-rate'], 0, 1),
    outage: values.outage,
    key: values.key,
    secret: values.secret,
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
