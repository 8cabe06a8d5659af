import pino from 'pino';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { QueryFailedError } from 'typeorm';
import { DECLARED_QUERY_PARAMETERS, pinoOptions, queryShape } from './pino-options';

/** The JSON lines a logger built from pinoOptions writes. */
function capture(): { logger: pino.Logger; lines: () => Array<Record<string, unknown>>; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const logger = pino(pinoOptions('info'), sink);
  return { logger, text: () => chunks.join(''), lines: () => chunks.join('').trim().split('\n').map((line) => JSON.parse(line)) };
}

describe('pinoOptions', () => {
  it("never logs a failed query's bound values: no webhook secret, no number, in the error or its driver error", () => {
    const secret = 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE';
    const driverError = Object.assign(new Error('duplicate key value violates unique constraint'), { parameters: [secret, '+447400123456'], code: '23505' });
    const error = new QueryFailedError('UPDATE "account_settings" SET "webhook_secret" = $1 WHERE "phone" = $2', [secret, '+447400123456'], driverError);
    const { logger, text, lines } = capture();

    logger.error({ err: error }, 'request failed');

    expect(text()).not.toContain(secret);
    expect(text()).not.toContain('7400123456');
    const [line] = lines();
    const err = line.err as Record<string, unknown>;
    expect(err).toMatchObject({ type: 'QueryFailedError', query: expect.stringContaining('UPDATE "account_settings"'), code: '23505' });
    expect(err.parameters).toBeUndefined();
    expect((err.driverError as Record<string, unknown>).parameters).toBeUndefined();
  });

  it('masks strings inside arrays of any logged object', () => {
    const { logger, text } = capture();

    logger.warn({ numbers: ['+447400123456', { nested: ['pf_live_abcdefghijklmnopqrstuvwxyz012345'] }] }, 'batch');

    expect(text()).toContain('+44740012****');
    expect(text()).not.toContain('7400123456');
    expect(text()).toContain('pf_live_[redacted]');
    expect(text()).not.toContain('abcdefghijklmnopqrstuvwxyz012345');
  });
});

describe('queryShape', () => {
  it('shows only the query parameter names the API declares; any other name, a token used as one included, is (name)', () => {
    expect(queryShape('/admin/v1/plans?Adm1nT0kenSixteenX')).toBe('(name)=*');
    expect(queryShape('/admin/v1/audit?limit=5&target_id=x&cursor=abc&token=secret&api_key=pf_live_x')).toBe('limit=*&target_id=*&cursor=*&(name)=*&(name)=*');
    expect(queryShape('/api/v1/usage')).toBeUndefined();
  });

  it('declares exactly the query parameters of the OpenAPI document', () => {
    const openapi = JSON.parse(readFileSync(join(__dirname, '../../openapi.json'), 'utf8')) as { paths: object };
    const declared = new Set<string>();
    for (const path of Object.values(openapi.paths as Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>)) {
      for (const operation of Object.values(path)) for (const parameter of operation.parameters ?? []) if (parameter.in === 'query') declared.add(parameter.name);
    }
    expect([...DECLARED_QUERY_PARAMETERS].sort()).toEqual([...declared].sort());
  });
});
