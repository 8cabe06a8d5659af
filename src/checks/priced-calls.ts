import type { ConfiguredNumber } from './check-definition';

/**
 * A paid call that is not a check: its price, set per deployment like a check's (a `PRICE_<NAME>`
 * variable and its default). One definition here; the CheckRegistry reads its price, and whoever
 * charges for it (the risk route, bulk jobs with the verdict) asks the registry.
 */
export interface PricedCall {
  readonly name: string;
  /** For people (Swagger, docs). */
  readonly title: string;
  readonly price: ConfiguredNumber;
  /** Where else the same price is charged, for people (the configuration reference). */
  readonly alsoCharged?: string;
}

/** POST /api/v1/risk, and each entry of a bulk job submitted with `risk: true` (docs/sms-pumping.md). */
export const RISK_VERDICT: PricedCall = {
  name: 'risk_verdict',
  title: 'Risk verdict (SMS pumping, SIM swap)',
  price: { variable: 'PRICE_RISK_VERDICT', default: 2 },
  alsoCharged: 'per billable entry of a bulk job submitted with `risk: true`, on top of its checks',
};

export const PRICED_CALLS: readonly PricedCall[] = [RISK_VERDICT];
