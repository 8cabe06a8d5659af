import { parseArgs } from 'node:util';
import { startTwilioSimulator, TWILIO_SIMULATOR_DEFAULTS } from './simulator';

const USAGE = `Simulator of Twilio Lookup v2 (docs/upstream-twilio-lookup.md), on its own (the benchmark's backup).

  node dist/tools/twilio-simulator/main.js [--port 4020] [--host 127.0.0.1] [--latency-ms 100] [--outage]

Point the service at it with <ID>_ADAPTER=twilio-lookup <ID>_URL=http://127.0.0.1:4020
<ID>_KEY=${TWILIO_SIMULATOR_DEFAULTS.key} <ID>_SECRET=${TWILIO_SIMULATOR_DEFAULTS.secret}.`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '4020' },
      host: { type: 'string', default: TWILIO_SIMULATOR_DEFAULTS.host },
      'latency-ms': { type: 'string', default: '0' },
      outage: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = Number(values.port);
  const latencyMs = Number(values['latency-ms']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port must be 0 to 65535');
  if (!Number.isFinite(latencyMs) || latencyMs < 0) throw new Error('--latency-ms must be a number, 0 or more');
  const simulator = await startTwilioSimulator({ port, host: values.host, latencyMs, outage: values.outage });
  console.log(`[twilio-simulator] listening on ${simulator.url}`);
  const stop = () => {
    void simulator.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`[twilio-simulator] ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  process.exit(1);
});
