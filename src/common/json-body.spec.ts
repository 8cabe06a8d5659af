import { depthExceeds } from './json-body';

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('depthExceeds', () => {
  it.each([
    [1, false],
    [32, false],
    [33, true],
    [100_000, true],
  ])('a body nested %i levels exceeds 32: %p', (depth, expected) => {
    expect(depthExceeds(nested(depth), 32)).toBe(expected);
  });

  it('counts arrays as levels too, and ignores scalars', () => {
    expect(depthExceeds('x', 0)).toBe(false);
    expect(depthExceeds([[[1]]], 2)).toBe(true);
    expect(depthExceeds({ phone: '+1', checks: { a: true } }, 2)).toBe(false);
  });
});
