/* global process */
// `npm run admin -- <command>`: the compiled admin command line (dist/tools/admin-cli.js), built first
// when a source changed since the last build (saying so on stderr: stdout is the command's answer).
// One process: the build check and the command share a Node start-up.
import module, { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildIfChanged } from './build-if-changed.mjs';

const root = join(import.meta.dirname, '..', '..');
if (!(await buildIfChanged({ out: process.stderr }))) process.exit(1);
// Node >= 22.1 keeps the compiled code of what a command loads (Nest, TypeORM…) between runs, a third of
// its start-up; Node 20 has no such cache and runs without it.
module.enableCompileCache?.(join(root, 'node_modules', '.cache', 'phone-filter-compile'));
createRequire(import.meta.url)(join(root, 'dist', 'tools', 'admin-cli.js'));
