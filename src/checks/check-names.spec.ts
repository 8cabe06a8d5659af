import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BUILT_IN_CHECKS } from './built-in-checks';

/**
 * A check has one home: its name is written in its definition and in the few places that show the
 * contract's fields (the six-field DTO and Swagger examples), not in every module that handles checks.
 * Counted like `grep -rl <name> src` over non-test files outside src/provider/adapters/ and the adapters'
 * descriptors (adapters speak the upstream's protocol per check and declare the checks they answer, by
 * design). Main had 10, 18 and 15 files for the three names. 7: the six-field answer is one concept in two
 * files, its rules (phone-answer.ts, which the admin CLI loads) and its OpenAPI description (phone-answer.dto.ts,
 * which brings Swagger).
 */
const SRC = join(__dirname, '..');
const MAX_FILES_PER_NAME = 7;
/** The adapters' descriptors: what each adapter answers, kept in config/ for start-up and settings to read. */
const ADAPTER_DESCRIPTORS = join('config', 'upstream-adapters.ts');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return relative(SRC, path) === join('provider', 'adapters') ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && relative(SRC, path) !== ADAPTER_DESCRIPTORS ? [path] : [];
  });
}

describe('the names of the built-in checks in src/', () => {
  const files = sourceFiles(SRC).map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));

  it.each(BUILT_IN_CHECKS.map((check) => check.name))(`%s appears in at most ${MAX_FILES_PER_NAME} files outside provider/adapters/`, (name) => {
    const naming = files.filter((file) => file.text.includes(name)).map((file) => file.path);
    expect(naming.length).toBeGreaterThan(0);
    expect(naming.length <= MAX_FILES_PER_NAME ? [] : naming).toEqual([]);
  });
});
