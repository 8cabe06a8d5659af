import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * The short block `npm start` ends with, for the person at the terminal: where the service listens,
 * its docs, and how to call it: the demo key on the first start of the embedded database, or how to
 * get a new key afterwards. Plain stdout, never a log line: keys never reach the logs.
 */
/** Credits of the demo account created on the first start of the embedded database. */
export const DEMO_CREDITS = 10_000;

export interface StartBanner {
  baseUrl: string;
  /** ADMIN_TOKEN is set: /admin/v1 answers. */
  adminApi: boolean;
  /** Set on the start that created the demo account. */
  demoKey?: string;
  /** The demo account's id on later starts, when known. */
  demoAccountId?: string;
  embedded: boolean;
}

/** The rows of the start-up block, label → text. */
function bannerRows({ baseUrl, adminApi, demoKey, demoAccountId, embedded }: StartBanner): [string, string][] {
  const rows: [string, string][] = [
    ['API', `${baseUrl}/api/v1`],
    ['Docs', `${baseUrl}/docs (Swagger UI)`],
    ['Metrics', `${baseUrl}/metrics`],
    ['Admin API', adminApi ? `on: ${baseUrl}/admin/v1 with the ADMIN_TOKEN` : 'off: start with ADMIN_TOKEN=<16+ characters> to turn /admin/v1 on (npm run admin works without it)'],
  ];
  if (demoKey) {
    rows.push(['Demo key', `${demoKey} (${DEMO_CREDITS} credits; shown once, keep it)`]);
    rows.push(['Try', `curl -s -X POST ${baseUrl}/api/v1/filter -H "Authorization: Bearer ${demoKey}" -H "Content-Type: application/json" -d '{"phone":"+447400123456"}'`]);
  } else if (demoAccountId) {
    rows.push(['API key', `the demo account's key was shown at its first start; a new one: npm run admin -- issue-key ${demoAccountId}`]);
  } else {
    const where = embedded ? '' : ' (with the same DATABASE_URL)';
    rows.push(['API key', `npm run admin -- create-account --name "My app" --plan standard --credits 1000${where}`]);
  }
  return rows;
}

/** The readable block, for a terminal. */
export function startBanner(banner: StartBanner): string {
  const rows = bannerRows(banner);
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

/**
 * The same, as ONE line shaped like the log lines around it, for logs that are JSON (a file, a
 * collector): the fields are the block's rows. Written to stdout directly, as the block is, because
 * the demo key (first start only) must reach the person starting the service, not the log redaction.
 */
export function startBannerLine(banner: StartBanner, now = new Date()): string {
  const fields = Object.fromEntries(bannerRows(banner).map(([label, text]) => [label.toLowerCase().replace(/ /g, '_'), text]));
  const line = { level: 'info', time: now.toISOString(), pid: process.pid, hostname: hostname(), context: 'Bootstrap', msg: `Phone Filter is ready, listening on ${banner.baseUrl}`, ...fields };
  return `${JSON.stringify(line)}\n`;
}
