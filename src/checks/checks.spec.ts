import { costPerCall } from './checks';

const prices = { network_status: 4, line_type: 1, portability: 2 };

describe('costPerCall', () => {
  it.each([
    [{ network_status: false, line_type: false, portability: false }, 0],
    [{ network_status: false, line_type: true, portability: false }, 1],
    [{ network_status: false, line_type: false, portability: true }, 2],
    [{ network_status: false, line_type: true, portability: true }, 3],
    [{ network_status: true, line_type: false, portability: false }, 4],
    [{ network_status: true, line_type: true, portability: false }, 5],
    [{ network_status: true, line_type: false, portability: true }, 6],
    [{ network_status: true, line_type: true, portability: true }, 7],
  ])('prices %j at %i credits', (checks, cost) => {
    expect(costPerCall(checks, prices)).toBe(cost);
  });

  it('follows the configured prices', () => {
    expect(costPerCall({ network_status: true, line_type: true, portability: true }, { network_status: 10, line_type: 20, portability: 30 })).toBe(60);
  });
});
