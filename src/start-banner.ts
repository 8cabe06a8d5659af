import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * The short block `npm start` ends with, for the person at the terminal: where the service listens,
 * its docs, and how to call it: the demo key on the first start of the embedded database, or how to
 * get a new key afterwards. Plain stdout, never a log line: keys never reach the logs.
 */
/** Credits of the demo account created on the first start of the embedded database. */
export const DEMO_CREDITS = 10_000;

export interface StartBanner {
  baseUrl: string;
  /** Set on the start that created the demo account. */
  demoKey?: string;
  /** The demo account's id on later starts, when known. */
  demoAccountId?: string;
  embedded: boolean;
}

export function startBanner({ baseUrl, demoKey, demoAccountId, embedded }: StartBanner): string {
  const rows: [string, string][] = [
    ['API', `${baseUrl}/api/v1`],
    ['Docs', `${baseUrl}/docs (Swagger UI)`],
    ['Metrics', `${baseUrl}/metrics`],
  ];
  if (demoKey) {
    rows.push(['Demo key', `${demoKey} (${DEMO_CREDITS} credits; shown once, keep it)`]);
    rows.push(['Try', `curl -s -X POST ${baseUrl}/api/v1/filter -H "Authorization: Bearer ${demoKey}" -H "Content-Type: application/json" -d '{"phone":"+14155552671"}'`]);
  } else if (demoAccountId) {
    rows.push(['API key', `the demo account's key was shown at its first start; a new one: npm run admin -- issue-key ${demoAccountId}`]);
  } else {
    const where = embedded ? '' : ' (with the same DATABASE_URL)';
    rows.push(['API key', `npm run admin -- create-account --name "My app" --plan standard --credits 1000${where}`]);
  }
  const width = Math.max(...rows.map(([label]) => label.length));
  return `\nPhone Filter is ready\n${rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`).join('\n')}\n\n`;
}

/** The demo account's id is kept beside the embedded data folder, so later starts can name it. */
export function rememberDemoAccount(dataDir: string, accountId: string): void {
  writeFileSync(`${dataDir}.demo-account`, `${accountId}\n`);
}

export function demoAccountOf(dataDir: string): string | undefined {
  const file = `${dataDir}.demo-account`;
  return existsSync(file) ? readFileSync(file, 'utf8').trim() || undefined : undefined;
}
