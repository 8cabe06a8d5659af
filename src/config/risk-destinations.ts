import { readFileSync } from 'node:fs';

/** A destination key: an ISO 3166-1 alpha-2 country (`CU`) or an E.164 prefix (`+88213`). */
const KEY = /^(?:[A-Z]{2}|\+[1-9]\d{0,14})$/;

/**
 * RISK_DESTINATIONS (docs/sms-pumping.md "The destination table"): the deployment's destination risk
 * table, replacing the default one of src/risk/destination-defaults.ts. A JSON object `{ "<country or
 * +prefix>": <risk 0-100> }`, given inline (it starts with `{`) or as the path of a JSON file holding
 * one. The table or the problems found, each naming what to fix.
 */
export function parseRiskDestinations(raw: string): { table?: Record<string, number>; problems: string[] } {
  let text = raw.trim();
  if (!text.startsWith('{')) {
    try {
      text = readFileSync(text, 'utf8');
    } catch (error) {
      return { problems: [`  - RISK_DESTINATIONS=${JSON.stringify(raw)}: not a JSON object, and no file can be read there (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`] };
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { problems: [`  - RISK_DESTINATIONS: not valid JSON (${(error as Error).message})`] };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { problems: ['  - RISK_DESTINATIONS: must be a JSON object { "<country or +prefix>": <risk 0-100> }'] };
  }
  const problems: string[] = [];
  const table: Record<string, number> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!KEY.test(key)) problems.push(`  - RISK_DESTINATIONS: key ${JSON.stringify(key.slice(0, 20))} must be a country (ISO 3166-1 alpha-2, e.g. "CU") or an E.164 prefix (e.g. "+88213")`);
    else if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 100) problems.push(`  - RISK_DESTINATIONS: ${key} must be an integer from 0 to 100`);
    else table[key] = value;
  }
  return problems.length > 0 ? { problems } : { table, problems };
}
