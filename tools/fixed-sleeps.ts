import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Fixed sleeps in the tests and tools (docs/development.md, "Tests that need time to pass"): a timer that
 * resolves a promise after a set time, a call of a sleep/delay/pause helper, a synchronous sleep. A test
 * waits on an event (a row, a log line, a metric) or moves the injected Clock (`clock.advance`, whose own
 * `sleep` is not counted); tools/fixed-sleeps.spec.ts holds what may remain, and why.
 *
 * `npx ts-node --transpile-only tools/fixed-sleeps.ts` prints them, file by file.
 */
export interface FixedSleep {
  file: string;
  line: number;
  text: string;
}

const PATTERNS: RegExp[] = [
  // new Promise((resolve) => setTimeout(resolve, 500)), and its spellings
  /setTimeout\(\s*(resolve|r|res|done|ok|next|wake)\s*,/,
  /setTimeout\(\s*\(\)\s*=>\s*(resolve|r|res|done)\(/,
  // sleep(200), await pause(RETRY_MS), delay(1000): a call with an argument, not a clock's method
  /(?<![.\w])(sleep|delay|pause)\(\s*[^)\s]/,
  // the promise timers, a synchronous sleep
  /setTimeout as \w+\s*}\s*from 'node:timers\/promises'|from 'timers\/promises'/,
  /Atomics\.wait\(|execFileSync\('sleep'/,
];

/** Lines that define a sleep (its declaration) rather than take one. */
const DEFINITION = /(const|function|let)\s+(sleep|delay|pause)\b|^\s*(sleep|delay|pause)\(ms/;

const SCANNED = ['test', 'tools'];

/** This finder and its spec, whose patterns and planted examples are no sleeps. */
const OWN_FILES = ['fixed-sleeps.ts', 'fixed-sleeps.spec.ts'];

export function findFixedSleeps(root: string): FixedSleep[] {
  const found: FixedSleep[] = [];
  for (const folder of SCANNED) {
    for (const path of sourceFiles(join(root, folder))) {
      const lines = readFileSync(path, 'utf8').split('\n');
      lines.forEach((text, index) => {
        if (DEFINITION.test(text) || /^\s*(\/\/|\*)/.test(text)) return;
        if (PATTERNS.some((pattern) => pattern.test(text))) found.push({ file: relative(root, path), line: index + 1, text: text.trim() });
      });
    }
  }
  return found;
}

/** How many a file holds. */
export function countByFile(sleeps: FixedSleep[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const sleep of sleeps) counts.set(sleep.file, (counts.get(sleep.file) ?? 0) + 1);
  return counts;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mjs|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') && !OWN_FILES.includes(entry.name) ? [path] : [];
  });
}

if (require.main === module) {
  const sleeps = findFixedSleeps(join(__dirname, '..'));
  for (const [file, count] of [...countByFile(sleeps)].sort((a, b) => b[1] - a[1])) console.log(`${String(count).padStart(3)}  ${file}`);
  console.log(`${sleeps.length} fixed sleeps in ${countByFile(sleeps).size} files`);
}
