import { freePort, ServiceProcess, startServiceProcess } from '../../helpers/service-process';

export const ADMIN_TOKEN = 'faults-admin-token-0123456789';

/** One service instance (a child process running src/main.ts) that a test can kill -9 and start again on its port. */
export interface Instance {
  readonly url: string;
  readonly process: ServiceProcess | undefined;
  /** Its process is alive (started, and neither killed nor exited since). */
  readonly running: boolean;
  start(): Promise<void>;
  /** kill -9, as a crash would. */
  kill(): Promise<void>;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function startInstances(count: number, env: Record<string, string | undefined>): Promise<Instance[]> {
  const instances = await Promise.all(Array.from({ length: count }, async () => instance(await freePort(), env)));
  await Promise.all(instances.map((one) => one.start()));
  return instances;
}

function instance(port: number, env: Record<string, string | undefined>): Instance {
  let current: ServiceProcess | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    get process() {
      return current;
    },
    get running() {
      return current !== undefined && current.child.exitCode === null && current.child.signalCode === null;
    },
    async start() {
      current = await startServiceProcess({ ADMIN_TOKEN, ...env }, port);
      await current.listening();
    },
    async kill() {
      await current?.stop('SIGKILL');
    },
    async stop() {
      return (await current?.stop('SIGTERM')) ?? null;
    },
  };
}

export interface HttpAccount {
  id: string;
  auth: { Authorization: string };
}

/** A new account through the admin API of a running instance. */
export async function createAccountOver(url: string, options: { plan: string; credits: number }): Promise<HttpAccount> {
  const res = await fetch(`${url}/admin/v1/accounts`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `faults ${options.plan}`, ...options }),
  });
  const body = (await res.json()) as { id: string; api_key: string };
  if (res.status !== 201) throw new Error(`creating an account: ${res.status} ${JSON.stringify(body)}`);
  return { id: body.id, auth: { Authorization: `Bearer ${body.api_key}` } };
}
