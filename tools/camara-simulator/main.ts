import { parseArgs } from 'node:util';
import { CAMARA_SIMULATOR_DEFAULTS, startCamaraSimulator } from './simulator';

const USAGE = `Simulator of an operator's CAMARA SimSwap API v2 (docs/upstream-camara-sim-swap.md), on its own.

  node dist/tools/camara-simulator/main.js [--port 4030] [--host 127.0.0.1] [--latency-ms 100] [--outage]

Point the service at it with <ID>_ADAPTER=camara-sim-swap <ID>_URL=http://127.0.0.1:4030/sim-swap/v2
<ID>_TOKEN_URL=http://127.0.0.1:4030/oauth2/token <ID>_KEY=${CAMARA_SIMULATOR_DEFAULTS.clientId} <ID>_SECRET=${CAMARA_SIMULATOR_DEFAULTS.clientSecret}.`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '4030' },
      host: { type: 'string', default: CAMARA_SIMULATOR_DEFAULTS.host },
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
  const simulator = await startCamaraSimulator({ port, host: values.host, latencyMs, outage: values.outage });
  console.log(`[camara-simulator] listening on ${simulator.url} (token endpoint ${simulator.tokenUrl})`);
  const stop = () => {
    void simulator.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`[camara-simulator] ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  process.exit(1);
});
