/**
 * The default destination risk table (docs/sms-pumping.md "The destination table", where each entry's
 * source is cited): risk 0-100 by E.164 prefix or ISO 3166-1 country. A deployment replaces it whole
 * with RISK_DESTINATIONS; an account adjusts it with PATCH /api/v1/settings `risk.destinations`.
 *
 * It is a starting point from public guidance, not a verdict on any country: a destination alone never
 * flags a number (its weight stays below flag_score, see scoring.ts); it makes the other signals count
 * sooner there.
 */
export const DEFAULT_DESTINATIONS: Readonly<Record<string, number>> = {
  // ITU-T E.164 non-geographic codes: numbers no person signs up with, and the ranges international
  // premium-rate number (IPRN) resellers advertise.
  '+979': 100, // International Premium Rate Service
  '+881': 90, // Global Mobile Satellite System
  '+882': 90, // International Networks
  '+883': 90, // International Networks
  '+870': 90, // Inmarsat
  '+808': 80, // International Shared Cost Service
  '+878': 80, // Universal Personal Telecommunications
  // The destinations IPRN providers advertised most, month after month, up to 2018 (commsrisk.com, "What
  // Is New with IRSF Fraud?"); the same article notes the set has widened since.
  CU: 70,
  SO: 70,
  LV: 50,
  LT: 50,
  // Marked "High Fraud Risk" by a messaging vendor's country permissions (Braze docs, "Geographic permissions").
  AZ: 60,
  // SMS turned off by public sign-up services during pumping attacks: login.gov (18F/identity-idp PRs 4925
  // "to stop ongoing SMS fraud attack", 5250, 5487/5537) and p2pdotme-sdk PR 44.
  DZ: 60,
  IQ: 60,
  TL: 60,
  EC: 50,
  NG: 50,
};
