import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HLR_CONNECTIVITY_STATUSES } from '../src/provider/adapters/hlr-lookups.protocol';
import { NETWORK_SITUATIONS, NetworkSituation } from '../src/provider/adapters/test-numbers';
import { LINE_STATUSES } from '../src/provider/adapters/twilio-lookup.protocol';
import { CONNECTION_STATUSES } from '../src/checks/phone-answer.dto';
import { LINE_STATUS_FOR } from './twilio-simulator/answers';
import { HLR_WORD_FOR } from './upstream-simulator/answers';

/** Each provider's vocabulary as data: word → the service's status. */
const VOCABULARIES: Record<string, Readonly<Record<string, string>>> = {
  sandbox: NETWORK_SITUATIONS,
  'hlr-lookups': HLR_CONNECTIVITY_STATUSES,
  twilio: LINE_STATUSES,
};

/** docs/api.md "One meaning, whichever provider answers": per status, the backquoted words of each provider's column. */
function documentedTable(): Record<string, Record<string, string[]>> {
  const text = readFileSync(join(__dirname, '..', 'docs', 'api.md'), 'utf8');
  const section = text.slice(text.indexOf('### One meaning, whichever provider answers'));
  const rows = section.split('\n').filter((line) => /^\| `(CONNECTED|ABSENT|UNDETERMINED)` \|/.test(line));
  const words = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]).sort();
  return Object.fromEntries(
    rows.map((row) => {
      const cells = row.split('|').slice(1, -1);
      return [words(cells[0])[0], { sandbox: words(cells[2]), 'hlr-lookups': words(cells[3]), twilio: words(cells[4]) }];
    }),
  );
}

describe('one meaning whichever provider answers (docs/api.md)', () => {
  it('Twilio’s five line statuses by Twilio’s definitions: active is UNDETERMINED, never CONNECTED', () => {
    expect(LINE_STATUSES).toEqual({ reachable: 'CONNECTED', active: 'UNDETERMINED', unreachable: 'ABSENT', inactive: 'ABSENT', unknown: 'UNDETERMINED' });
  });

  it('hlr-lookups’ four connectivity statuses: INVALID_MSISDN (assigned to no subscriber) is ABSENT, like Twilio’s inactive', () => {
    expect(HLR_CONNECTIVITY_STATUSES).toEqual({ CONNECTED: 'CONNECTED', ABSENT: 'ABSENT', INVALID_MSISDN: 'ABSENT', UNDETERMINED: 'UNDETERMINED' });
  });

  it('the side-by-side table of docs/api.md is the data, word for word', () => {
    const documented = documentedTable();
    expect(Object.keys(documented).sort()).toEqual([...CONNECTION_STATUSES].sort());
    for (const [provider, vocabulary] of Object.entries(VOCABULARIES)) {
      for (const status of CONNECTION_STATUSES) {
        const words = Object.keys(vocabulary).filter((word) => vocabulary[word] === status).sort();
        expect({ provider, status, words: documented[status][provider] }).toEqual({ provider, status, words });
      }
    }
  });

  it.each(Object.keys(NETWORK_SITUATIONS) as NetworkSituation[])('each simulator says the situation %s in a word its adapter reads as the same status', (situation) => {
    const status = NETWORK_SITUATIONS[situation];
    expect({ hlr: HLR_CONNECTIVITY_STATUSES[HLR_WORD_FOR[situation]], twilio: LINE_STATUSES[LINE_STATUS_FOR[situation]] }).toEqual({ hlr: status, twilio: status });
  });

  it('the Twilio simulator says every one of the five line statuses', () => {
    expect(new Set(Object.values(LINE_STATUS_FOR))).toEqual(new Set(Object.keys(LINE_STATUSES)));
    expect(new Set(Object.values(HLR_WORD_FOR))).toEqual(new Set(Object.keys(HLR_CONNECTIVITY_STATUSES)));
  });
});
