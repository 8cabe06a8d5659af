/**
 * What the configuration knows of each adapter a provider id can run on (`<ID>_ADAPTER`, or PROVIDER):
 * its name, what it is, the checks it answers and the settings its protocol reads. Nothing else decides
 * which `<ID>_*` variables an adapter needs (start-up asks for exactly the ones listed here) nor which
 * checks it is asked (the router asks only the providers whose adapter lists the check, settings refuse
 * to turn on a check that no configured provider's adapter lists); the docs' adapters table is generated
 * from this list, provider.module.ts has one factory per name and each adapter answers exactly the
 * checks listed for it (the compiler checks both: ChecksOf). The adapter's code is in src/provider/adapters/.
 *
 * It lives in config/ (not beside the adapter) because config/ validates the environment before
 * anything starts, and settings/ (a leaf, which may not import provider/) asks it what is offered.
 */
export interface UpstreamAdapter {
  /** The value of `<ID>_ADAPTER` and of PROVIDER. */
  readonly name: string;
  /** One line for the docs' adapters table. */
  readonly summary: string;
  /** Where its upstream is described, when it has a page (docs/). */
  readonly guide?: string;
  /** The checks it answers (their names, src/checks/): the router never asks it another. */
  readonly checks: readonly string[];
  /**
   * The settings of a provider id on this adapter that its protocol reads, each with what it is at
   * the upstream: `url` with its default (the upstream's public API), `key` and `secret` (both
   * required when listed), `tokenUrl` (`<ID>_TOKEN_URL`, an OAuth2 token endpoint, required when listed).
   * A setting not listed is neither needed nor read (an in-process adapter lists none; a bearer-token
   * upstream lists `key` alone). A `url` without a default (an operator's own API) is required.
   */
  readonly settings: {
    readonly url?: { readonly default?: string };
    readonly key?: string;
    readonly secret?: string;
    readonly tokenUrl?: string;
  };
}

export const UPSTREAM_ADAPTERS = [
  {
    name: 'sandbox',
    summary: 'In-process, simulated answers (the test-number table of docs/api.md); numbering-plan facts from libphonenumber',
    checks: ['network_status', 'line_type', 'portability', 'sim_swap'],
    settings: {},
  },
  {
    name: 'hlr-lookups',
    summary: 'The HLR Lookups API v2 (hlr-lookups.com), over HTTP with signed requests',
    guide: 'docs/upstream-hlr-lookups.md',
    checks: ['network_status', 'line_type', 'portability'],
    settings: {
      url: { default: 'https://www.hlr-lookups.com/api/v2' },
      key: 'the API key',
      secret: 'the API secret (signs each request)',
    },
  },
  {
    name: 'twilio-lookup',
    summary: 'Twilio Lookup v2, over HTTP with basic authentication',
    guide: 'docs/upstream-twilio-lookup.md',
    checks: ['network_status', 'line_type', 'sim_swap'],
    settings: {
      url: { default: 'https://lookups.twilio.com' },
      key: 'the Account SID (AC…) or an API key SID (SK…)',
      secret: 'the Auth Token, or the API key secret',
    },
  },
  {
    name: 'camara-sim-swap',
    summary: "An operator's CAMARA SimSwap API (GSMA Open Gateway: retrieve-date, check with maxAge), over HTTP with OAuth2 client credentials",
    guide: 'docs/upstream-camara-sim-swap.md',
    checks: ['sim_swap'],
    settings: {
      url: {},
      key: 'the OAuth2 client id',
      secret: 'the OAuth2 client secret',
      tokenUrl: "the operator's OAuth2 token endpoint (client credentials)",
    },
  },
] as const satisfies readonly UpstreamAdapter[];

export type UpstreamAdapterName = (typeof UPSTREAM_ADAPTERS)[number]['name'];

export const UPSTREAM_ADAPTER_NAMES: readonly UpstreamAdapterName[] = UPSTREAM_ADAPTERS.map((adapter) => adapter.name);

/** The checks the adapter `N` answers: an adapter's table of answers is typed by it, so it answers exactly these. */
export type ChecksOf<N extends UpstreamAdapterName> = Extract<(typeof UPSTREAM_ADAPTERS)[number], { name: N }>['checks'][number];

/** The descriptor of an adapter by name. */
export function upstreamAdapter(name: UpstreamAdapterName): (typeof UPSTREAM_ADAPTERS)[number] {
  return UPSTREAM_ADAPTERS.find((adapter) => adapter.name === name)!;
}

/** Every check that at least one of these adapters answers. */
export function checksOffered(adapters: Iterable<UpstreamAdapterName>): Set<string> {
  return new Set([...adapters].flatMap((name) => upstreamAdapter(name).checks));
}
