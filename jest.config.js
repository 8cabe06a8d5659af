/**
 * Three projects (docs/development.md): unit tests next to the code, the medium tier (services on a real
 * PostgreSQL, no HTTP) and e2e (the HTTP contract and process-level proofs).
 *
 * TypeScript goes through SWC, which only strips types (a third of ts-jest's CPU on a cold cache); types
 * are checked by `npm run lint` (tsc --noEmit), which CI runs before the tests. Nest needs the legacy
 * decorators with their design-time metadata, and class names kept (providers are named after them).
 *
 * Files run side by side: the medium and e2e files each work on a database of their own (test/medium/
 * medium.ts, test/e2e-environment.ts), so nothing they write is shared. Two workers even on two cores
 * (jest's default there is one): a file spends much of its time waiting on PostgreSQL, child processes
 * and sockets, and one worker leaves the second core idle. Measured on a machine loaded by other work
 * (load 14-20), 1, 2 and 3 workers took the same wall time (there the CPU is the limit); 3 pushed files
 * past their deadlines.
 *
 * A test's deadline is generous: it is reached only by a failure, and a busy machine must not fail a
 * test that works (docs/development.md).
 */
const { availableParallelism } = require('node:os');

const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2023',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];
const transform = { '^.+\\.ts$': swc };
module.exports = {
  testTimeout: 180_000,
  maxWorkers: Math.max(2, availableParallelism() - 1),
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/tools/**/*.spec.ts'],
      transform,
    },
    {
      displayName: 'medium',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'],
      transform,
      globalSetup: '<rootDir>/test/global-setup.ts',
      globalTeardown: '<rootDir>/test/global-teardown.ts',
    },
    {
      displayName: 'e2e',
      testEnvironment: '<rootDir>/test/e2e-environment.ts',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform,
      globalSetup: '<rootDir>/test/global-setup.ts',
      globalTeardown: '<rootDir>/test/global-teardown.ts',
    },
  ],
};
