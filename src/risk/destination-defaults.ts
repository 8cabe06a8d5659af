/**
 * The default destination risk table (docs/sms-pumping.md "The destination table", generated from
 * here): risk 0-100 by E.164 prefix or ISO 3166-1 country, each entry with the public guidance it comes
 * from. A deployment replaces it whole with RISK_DESTINATIONS; an account adjusts it with PATCH
 * /api/v1/settings `risk.destinations`.
 *
 * It is a starting point from public guidance, not a verdict on any country: a destination alone never
 * blocks a number (its weight is at most 35, see scoring.ts); it makes the other signals count sooner.
 */
export interface DestinationEntry {
  readonly key: string;
  readonly risk: number;
  /** Where it comes from, for the documentation. */
  readonly source: string;
}

const ITU = 'ITU-T E.164 assignments: a non-geographic code no person signs up with, and among the ranges IPRN resellers advertise';
const COMMSRISK =
  'commsrisk.com, "What Is New with IRSF Fraud?": among the destinations IPRN providers advertised most, month after month, up to 2018 (the article notes the set has widened since)';
const BRAZE = 'Braze documentation, "Geographic permissions": tagged High Fraud Risk for SMS traffic pumping';
const LOGIN_GOV = 'login.gov (github.com/18F/identity-idp PRs 4925, 5250, 5487/5537): SMS turned off during fraud and spam attacks';
const P2P = 'github.com/p2pdotme/p2pdotme-sdk PR 44: SMS/OTP login turned off';

export const DEFAULT_DESTINATION_ENTRIES: readonly DestinationEntry[] = [
  { key: '+979', risk: 100, source: `${ITU} (International Premium Rate Service)` },
  { key: '+881', risk: 90, source: `${ITU} (Global Mobile Satellite System)` },
  { key: '+882', risk: 90, source: `${ITU} (International Networks)` },
  { key: '+883', risk: 90, source: `${ITU} (International Networks)` },
  { key: '+870', risk: 90, source: `${ITU} (Inmarsat)` },
  { key: '+808', risk: 80, source: `${ITU} (International Shared Cost Service)` },
  { key: '+878', risk: 80, source: `${ITU} (Universal Personal Telecommunications)` },
  { key: 'CU', risk: 70, source: COMMSRISK },
  { key: 'SO', risk: 70, source: COMMSRISK },
  { key: 'LV', risk: 50, source: COMMSRISK },
  { key: 'LT', risk: 50, source: COMMSRISK },
  { key: 'AZ', risk: 60, source: BRAZE },
  { key: 'DZ', risk: 60, source: LOGIN_GOV },
  { key: 'IQ', risk: 60, source: LOGIN_GOV },
  { key: 'TL', risk: 60, source: LOGIN_GOV },
  { key: 'EC', risk: 50, source: P2P },
  { key: 'NG', risk: 50, source: P2P },
];

export const DEFAULT_DESTINATIONS: Readonly<Record<string, number>> = Object.fromEntries(DEFAULT_DESTINATION_ENTRIES.map((entry) => [entry.key, entry.risk]));
