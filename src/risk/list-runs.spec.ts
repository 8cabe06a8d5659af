import { ListRuns } from './list-runs';

describe('ListRuns: the runs within a bulk list', () => {
  const run = ['+447400123450', '+447400123451', '+447400123452', '+447400123459', '+447400123461'];

  it.each([
    ['the first of a run of five within 30 consecutive numbers', '+447400123450', { block: 5, nearby: 5 }],
    ['a number just past the run, in the block of ten after it', '+447400123471', { block: 5, nearby: 1 }],
    ['a number of the same 100-block but far from the run', '+447400123499', { block: 5, nearby: 0 }],
    ['a number of another block', '+447400987654', { block: 0, nearby: 0 }],
  ])('%s', (_name, e164, expected) => {
    expect(new ListRuns(run).of(e164)).toEqual(expected);
  });

  it('counts a number sent twice once', () => {
    expect(new ListRuns(['+447400123450', '+447400123450', '+447400123451']).of('+447400123450')).toEqual({ block: 2, nearby: 2 });
  });

  it('sees nothing in a list of scattered numbers: each number is its own only neighbour', () => {
    const scattered = ['+447400123456', '+447700900123', '+14155552671', '+33612345678'];
    const runs = new ListRuns(scattered);
    for (const e164 of scattered) expect(runs.of(e164)).toEqual({ block: 1, nearby: 1 });
  });
});
