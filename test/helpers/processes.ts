import { readdirSync, readFileSync } from 'node:fs';

/** A process that is gone, or a zombie nobody has reaped yet (it holds nothing any more). */
export function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** Live postgres processes (postmaster or backend) serving this data folder. */
export function postgresOf(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('postgres') && cmdline.includes(dataDir) && !gone(Number(entry))) pids.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return pids;
}

/** The live processes whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid && !gone(Number(entry))) children.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return children;
}
