import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processIoCalls } from './cpu';

describe('processIoCalls (the fixed-rate bench: system calls per call)', () => {
  it("counts this process's write system calls as /proc/<pid>/io has them", () => {
    const file = join(tmpdir(), `io-calls-${process.pid}.txt`);
    const fd = openSync(file, 'w');
    try {
      const before = processIoCalls(process.pid);
      for (let i = 0; i < 5; i++) writeSync(fd, 'x');
      const after = processIoCalls(process.pid);
      // Five writes of our own; other threads of this process (libuv's pool) may add a few.
      expect(after.writes - before.writes).toBeGreaterThanOrEqual(5);
      expect(after.reads).toBeGreaterThanOrEqual(before.reads);
    } finally {
      closeSync(fd);
      rmSync(file, { force: true });
    }
  });

  it('answers zeros for a process that is not there', () => {
    expect(processIoCalls(2 ** 22 + 1)).toEqual({ reads: 0, writes: 0 });
  });
});
