import { BUILT_IN_CHECKS } from './built-in-checks';
import type { CheckDefinition } from './check-definition';
import { checkOptionsChangeProblems, checkOptionsOf, optionValuesKey, sameOptionValues } from './check-options';

const SIM_SWAP = BUILT_IN_CHECKS.find((check) => check.name === 'sim_swap')!;

describe('per-account options of checks, declared by their definitions', () => {
  it('resolves every option of every check that declares any: the stored value, else the default', () => {
    expect(checkOptionsOf(BUILT_IN_CHECKS, {})).toEqual({ sim_swap: { window_hours: 168 } });
    expect(checkOptionsOf(BUILT_IN_CHECKS, { sim_swap: { window_hours: 72 } })).toEqual({ sim_swap: { window_hours: 72 } });
    // A stored value out of today's bounds (a bound tightened since) is not used.
    expect(checkOptionsOf(BUILT_IN_CHECKS, { sim_swap: { window_hours: 99_999 } })).toEqual({ sim_swap: { window_hours: 168 } });
  });

  it.each([
    [{ sim_swap: { window_hours: 72 } }, []],
    [{ sim_swap: { window_hours: null } }, []],
    [{ sim_swap: {} }, []],
    [{ sim_swap: { window_hours: 0 } }, ['check_options.sim_swap.window_hours must be an integer from 1 to 2400, or null for the default (168)']],
    [{ sim_swap: { window_hours: 2401 } }, ['check_options.sim_swap.window_hours must be an integer from 1 to 2400, or null for the default (168)']],
    [{ sim_swap: { window_hours: 1.5 } }, ['check_options.sim_swap.window_hours must be an integer from 1 to 2400, or null for the default (168)']],
    [{ sim_swap: { window_hours: '72' } }, ['check_options.sim_swap.window_hours must be an integer from 1 to 2400, or null for the default (168)']],
    [{ sim_swap: { window: 72 } }, ['unknown field "check_options.sim_swap.window" (options of sim_swap: window_hours)']],
    [{ sim_swap: 72 }, ['check_options.sim_swap must be an object of options (window_hours)']],
    [{ line_type: { window_hours: 72 } }, ['check_options.line_type: the check line_type has no options']],
    [{ roaming: {} }, ['unknown field "check_options.roaming": not a check']],
    [[], ['check_options must be an object of checks, each an object of options']],
  ])('a change %j: %j', (change, problems) => {
    expect(checkOptionsChangeProblems(BUILT_IN_CHECKS, change)).toEqual(problems);
  });

  it('tells option values apart for the cache (an answer serves only the values it was asked with)', () => {
    expect(sameOptionValues({ window_hours: 72 }, { window_hours: 72 })).toBe(true);
    expect(sameOptionValues({ window_hours: 72 }, { window_hours: 168 })).toBe(false);
    expect(sameOptionValues(undefined, {})).toBe(true);
    expect(sameOptionValues(undefined, { window_hours: 168 })).toBe(false);
    expect(optionValuesKey({ b: 2, a: 1 })).toBe('a=1,b=2');
  });

  it('declares the SIM swap window within what the CAMARA check operation takes (maxAge 1 to 2400 hours)', () => {
    const [window] = (SIM_SWAP as CheckDefinition).options!;
    expect(window).toMatchObject({ name: 'window_hours', min: 1, max: 2400, default: 168 });
  });
});
