import { composeResult } from './answer';
import type { NumberDescription as NumberFacts } from './numbering-plan';

const valid: NumberFacts = { region: 'GB', validForPlan: true, lineType: 'MOBILE' };
const all = { network_status: true, line_type: true, portability: true };
const none = { network_status: false, line_type: false, portability: false };
const answers = {
  networkStatus: { status: 'CONNECTED' as const, carrier: 'EE' },
  numberType: { lineType: 'MOBILE' as const },
  portability: { isPorted: true, carrier: 'EE' },
};

describe('composeResult', () => {
  it('fills every field from the enabled checks', () => {
    expect(composeResult(valid, all, answers)).toEqual({ country: 'GB', valid: true, status: 'CONNECTED', carrier: 'EE', line_type: 'MOBILE', is_ported: true });
  });

  it('leaves disabled checks at their neutral values', () => {
    expect(composeResult(valid, none, {})).toEqual({ country: 'GB', valid: true, status: 'UNDETERMINED', carrier: null, line_type: 'UNKNOWN', is_ported: false });
  });

  it('takes the carrier from portability when network status is off', () => {
    const result = composeResult(valid, { network_status: false, line_type: false, portability: true }, { portability: { isPorted: false, carrier: 'Vodafone' } });
    expect(result.carrier).toBe('Vodafone');
    expect(result.status).toBe('UNDETERMINED');
  });

  it('is not valid when the network says ABSENT', () => {
    const result = composeResult(valid, all, { ...answers, networkStatus: { status: 'ABSENT', carrier: null } });
    expect(result).toMatchObject({ valid: false, status: 'ABSENT' });
  });

  it('answers ABSENT for a number invalid for its plan, whatever the settings', () => {
    for (const checks of [all, none]) {
      expect(composeResult({ region: 'US', validForPlan: false, lineType: 'UNKNOWN' }, checks, {})).toEqual({
        country: 'US', valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false,
      });
    }
  });

  it('always has exactly the six fields', () => {
    expect(Object.keys(composeResult(valid, none, {})).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
  });
});
