/** CPU time of processes from /proc (utime + stime): the figures that do not depend on what else the cores run. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Client } from 'pg';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

interface ProcStat {
  ppid: number;
  cpuMicros: number;
}

function procStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: the fields after it follow its closing parenthesis.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    return { ppid: Number(fields[1]), cpuMicros: (ticks / TICKS_PER_SECOND) * 1e6 };
  } catch {
    return undefined; // exited
  }
}

/** CPU time of one process (all its threads), in microseconds; 0 once it has exited. */
export function processCpuMicros(pid: number): number {
  return procStat(pid)?.cpuMicros ?? 0;
}

/** The read and write system calls a process (all its threads) has made so far (/proc/<pid>/io syscr, syscw); 0 once it has exited. */
export function processIoCalls(pid: number): { reads: number; writes: number } {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    return { reads: field('syscr'), writes: field('syscw') };
  } catch {
    return { reads: 0, writes: 0 };
  }
}

/** CPU time of a process and its children (a PostgreSQL server: the postmaster and its backends), per pid. */
export function treeCpuMicros(rootPid: number): Map<number, number> {
  const cpu = new Map<number, number>();
  const root = procStat(rootPid);
  if (root) cpu.set(rootPid, root.cpuMicros);
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = procStat(pid);
    if (stat?.ppid === rootPid) cpu.set(pid, stat.cpuMicros);
  }
  return cpu;
}

/** What the processes of a tree spent between two readings (a process started meanwhile counts from zero). */
export function treeDeltaMicros(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, micros] of after) sum += micros - (before.get(pid) ?? 0);
  return sum;
}

/** The pid of the PostgreSQL server (its postmaster) that `db` is connected to; the server must run on this machine. */
export async function postmasterPid(db: Client): Promise<number> {
  // Read while the backend lives: its parent is the postmaster.
  const [{ pid }] = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
  const ppid = procStat(pid)?.ppid;
  if (ppid === undefined) throw new Error(`backend ${pid} is not a process of this machine`);
  return ppid;
}
